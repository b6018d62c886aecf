/**
 * Play sessions inside a play process (play-process.ts): the user writes one seat's actions, the
 * environment's bots (or random play) write the others', in the same sandbox and with the same
 * limits as training. Errors of the environment's code end the session and come back located in
 * the user's files; nothing here throws for the user's code. Also "let a bot play": one whole
 * episode as a transcript.
 */
import { Rng, hash32 } from '../../sdk/environment/rng';
import { type Json } from '../../sdk/environment/schema';
import type { CompileDiagnostic, EndReason, EnvironmentDescription, SandboxErrorJson } from '../../sdk/dry-run-report';
import type { AutoplayRequest, AutoplayResult, PlayOpenRequest, PlayOpenResult, PlayOpponent, PlayPlayer, PlayRefusal, PlayStepResult, PlayTurn } from '../../sdk/play';
import { cutText } from './cut-text';
import { randomTextActor } from './dry-run';
import { type Actor, playEpisode } from './play-episode';
import { SandboxError } from './sandbox/errors';
import { SandboxEnvironment } from './sandbox/sandbox-environment';
import { type AgentTurnMessage, type StepResponse } from './sandbox/protocol';

/** Longest observation or action a turn carries back (environments may write up to 1 MB). */
const MAX_TEXT = 20_000;
/** Largest info, as JSON, a turn carries back whole. */
const MAX_INFO_CHARS = 20_000;
/** Console lines one answer carries back. */
const MAX_LOG_LINES = 200;

type Failed = { ok: false; compileErrors: CompileDiagnostic[]; error: SandboxErrorJson | null; logs: string[] };

/** Console output of the environment's code between two answers, bounded. */
class LogBuffer {
  private lines: string[] = [];
  private dropped = 0;

  add = (lines: string[]) => {
    for (const line of lines) {
      if (this.lines.length < MAX_LOG_LINES) this.lines.push(cutText(line, 2_000));
      else this.dropped++;
    }
  };

  drain(): string[] {
    const out = this.dropped > 0 ? [...this.lines, `… ${this.dropped} more lines left out`] : this.lines;
    this.lines = [];
    this.dropped = 0;
    return out;
  }
}

async function load(source: PlayOpenRequest['source'], logs: LogBuffer): Promise<{ ok: true; env: SandboxEnvironment } | Failed> {
  try {
    const loaded = await SandboxEnvironment.load(source, { onLogs: logs.add });
    if (!loaded.ok) return { ok: false, compileErrors: loaded.errors, error: null, logs: logs.drain() };
    return loaded;
  } catch (e) {
    if (!(e instanceof SandboxError)) throw e;
    return { ok: false, compileErrors: [], error: e.toJSON(), logs: logs.drain() };
  }
}

/** Who plays each agent, or why the request cannot be played (a seat or bot that does not exist). */
function choosePlayers(description: EnvironmentDescription, chosen: Record<string, PlayOpponent>, rest: (agent: string) => PlayPlayer): Record<string, PlayPlayer> | PlayRefusal {
  const { agents, bots, name } = description;
  for (const [agent, player] of Object.entries(chosen)) {
    if (!agents.includes(agent)) return { refused: `"${agent}" is not an agent of ${name}; its agents are ${agents.join(', ')}` };
    if ('bot' in player && !bots.includes(player.bot)) {
      return { refused: `${name} has no bot "${player.bot}"; ${bots.length > 0 ? `its bots are ${bots.join(', ')}` : 'it has none: choose random play'}` };
    }
  }
  return Object.fromEntries(agents.map((agent) => [agent, chosen[agent] ?? rest(agent)]));
}

/** What plays a seat the user does not: the first bot that is not "random", else random play (as training's evaluations choose). */
function defaultOpponent(description: EnvironmentDescription): PlayOpponent {
  const bot = description.bots.find((b) => b !== 'random') ?? description.bots[0];
  return bot ? { bot } : { random: true };
}

function actorFor(env: SandboxEnvironment, player: PlayOpponent, seed: number, agent: string): Actor {
  const bot = 'bot' in player ? player.bot : env.description.bots.includes('random') ? 'random' : null;
  if (bot) return (_agent, _observation, episodeId) => env.bot({ episodeId, bot });
  // Each seat its own stream, fixed by the episode's seed.
  return randomTextActor(new Rng(hash32(seed + env.description.agents.indexOf(agent))), env.description);
}

function isRefusal(value: object): value is PlayRefusal {
  return typeof (value as { refused?: unknown }).refused === 'string';
}

function missingRow(description: EnvironmentDescription, row: Json | undefined): PlayRefusal | null {
  if (!description.rowSchema || row !== undefined) return null;
  return { refused: `${description.name} reads dataset rows: choose a dataset version to take the task from (datasetVersionId)` };
}

function cutInfo(info: Record<string, Json>): Record<string, Json> {
  const text = JSON.stringify(info);
  return text.length <= MAX_INFO_CHARS ? info : { '(cut)': cutText(text, MAX_INFO_CHARS) };
}

export class PlaySessionRuntime {
  private current: AgentTurnMessage;
  private done = false;
  private endReason: EndReason | null = null;
  private readonly history: PlayTurn[] = [];
  private readonly taken: Record<string, number> = {};
  private readonly returns: Record<string, number>;
  private readonly actors: Record<string, Actor>;

  private constructor(
    private readonly sessionId: string,
    private readonly env: SandboxEnvironment,
    private readonly seat: string,
    private readonly players: Record<string, PlayPlayer>,
    private readonly maxTurns: number,
    private readonly logs: LogBuffer,
    first: AgentTurnMessage,
    seed: number,
  ) {
    this.current = first;
    this.returns = Object.fromEntries(env.description.agents.map((a) => [a, 0]));
    this.actors = Object.fromEntries(
      Object.entries(players).flatMap(([agent, p]) => ('user' in p ? [] : [[agent, actorFor(env, p, seed, agent)]])),
    );
  }

  /** Opens a session: loads the environment, resets an episode and lets the bots play up to the user's first turn. */
  static async open(sessionId: string, request: PlayOpenRequest): Promise<{ session: PlaySessionRuntime | null; result: PlayOpenResult | PlayRefusal }> {
    const logs = new LogBuffer();
    const loaded = await load(request.source, logs);
    if (!loaded.ok) return { session: null, result: loaded };
    const { env } = loaded;
    const description = env.description;
    const seat = request.seat ?? description.agents[0];
    const players = choosePlayers(description, { ...request.opponents }, (agent) => (agent === seat ? { user: true } : defaultOpponent(description)));
    const refusal =
      isRefusal(players)
        ? players
        : !description.agents.includes(seat)
          ? { refused: `"${seat}" is not an agent of ${description.name}; its agents are ${description.agents.join(', ')}` }
          : request.opponents?.[seat]
            ? { refused: `"${seat}" is your seat: it cannot have an opponent too` }
            : missingRow(description, request.row);
    if (refusal) {
      await env.dispose();
      return { session: null, result: refusal as PlayRefusal };
    }
    let reset;
    try {
      reset = await env.reset({ episodeId: sessionId, seed: request.seed, taskSeed: request.seed, row: request.row });
    } catch (e) {
      await env.dispose();
      if (!(e instanceof SandboxError)) throw e;
      return { session: null, result: { ok: false, compileErrors: [], error: e.toJSON(), logs: logs.drain() } };
    }
    const session = new PlaySessionRuntime(sessionId, env, seat, players as Record<string, PlayPlayer>, request.maxTurns, logs, reset.turn, request.seed);
    const error = await session.guard(() => session.advance());
    const opponents = Object.fromEntries(Object.entries(session.players).flatMap(([agent, p]) => ('user' in p ? [] : [[agent, p]])));
    const result: PlayOpenResult = {
      ok: true,
      sessionId,
      description,
      seat,
      opponents,
      systemPrompt: cutText(reset.systemPrompts[seat] ?? '', MAX_TEXT),
      task: reset.task,
      seed: request.seed,
      observation: session.observation(),
      turn: session.history.length,
      done: session.done,
      endReason: session.endReason,
      returns: { ...session.returns },
      history: session.history.slice(),
      maxTurns: request.maxTurns,
      idleMs: 0,
      error,
      logs: logs.drain(),
    };
    if (session.done) await session.close();
    return { session: session.done ? null : session, result };
  }

  get ended(): boolean {
    return this.done;
  }

  /** The user's action, then the bots' turns up to the user's next turn or the end. */
  async step(action: string): Promise<PlayStepResult> {
    let turn: PlayTurn | null = null;
    let botTurns: PlayTurn[] = [];
    const error = await this.guard(async () => {
      if (this.done) throw new SandboxError('invalid-output', 'step', 'the episode has ended', null, '');
      turn = await this.play(this.seat, action);
      botTurns = await this.advance();
    });
    if (this.done) await this.close();
    return {
      turn,
      botTurns,
      observation: this.observation(),
      turnCount: this.history.length,
      done: this.done,
      endReason: this.endReason,
      returns: { ...this.returns },
      error,
      logs: this.logs.drain(),
    };
  }

  async close(): Promise<void> {
    await this.env.close(this.sessionId).catch(() => {});
    await this.env.dispose();
  }

  private observation(): string | null {
    return this.done ? null : cutText(this.current.observation, MAX_TEXT);
  }

  /** Runs turns; an error of the environment's code ends the episode and is returned. */
  private async guard(fn: () => Promise<unknown>): Promise<SandboxErrorJson | null> {
    try {
      await fn();
      return null;
    } catch (e) {
      if (!(e instanceof SandboxError)) throw e;
      this.done = true;
      this.endReason = 'error';
      return e.toJSON();
    }
  }

  /** The other seats play until it is the user's turn or the episode ends (turn limits as in play-episode.ts). */
  private async advance(): Promise<PlayTurn[]> {
    const played: PlayTurn[] = [];
    while (!this.done) {
      const agent = this.current.agent;
      if ((this.taken[agent] ?? 0) >= this.maxTurns) {
        this.done = true;
        this.endReason = 'max-turns';
        break;
      }
      if (agent === this.seat) break;
      const action = await this.actors[agent](agent, this.current.observation, this.sessionId);
      played.push(await this.play(agent, action));
    }
    return played;
  }

  private async play(agent: string, action: string): Promise<PlayTurn> {
    this.taken[agent] = (this.taken[agent] ?? 0) + 1;
    const observation = this.current.observation;
    const r: StepResponse = await this.env.step({ episodeId: this.sessionId, action });
    for (const [a, reward] of Object.entries(r.rewards)) this.returns[a] = (this.returns[a] ?? 0) + reward;
    const turn: PlayTurn = {
      agent,
      by: this.players[agent],
      observation: cutText(observation, MAX_TEXT),
      action: cutText(action, MAX_TEXT),
      rewards: r.rewards,
      terminated: r.terminated,
      truncated: r.truncated,
      info: cutInfo(r.info),
      tool: r.tool,
      next: r.next ? { agent: r.next.agent, observation: cutText(r.next.observation, MAX_TEXT) } : null,
    };
    this.history.push(turn);
    if (r.next) this.current = r.next;
    else {
      this.done = true;
      this.endReason = r.terminated ? 'terminated' : 'truncated';
    }
    return turn;
  }
}

/** One whole episode, every seat played by `policy` unless `opponents` names another player for it. */
export async function autoplay(request: AutoplayRequest): Promise<AutoplayResult | PlayRefusal> {
  const logs = new LogBuffer();
  const loaded = await load(request.source, logs);
  if (!loaded.ok) return loaded;
  const { env } = loaded;
  try {
    const description = env.description;
    if ('bot' in request.policy && !description.bots.includes(request.policy.bot)) {
      return { refused: `${description.name} has no bot "${request.policy.bot}"; ${description.bots.length > 0 ? `its bots are ${description.bots.join(', ')}` : 'it has none: choose random play'}` };
    }
    const players = choosePlayers(description, { ...request.opponents }, () => request.policy);
    if (isRefusal(players)) return players;
    const refusal = missingRow(description, request.row);
    if (refusal) return refusal;
    const actors = Object.fromEntries(Object.entries(players).map(([agent, p]) => [agent, actorFor(env, p as PlayOpponent, request.seed, agent)]));
    const deadline = Date.now() + request.budgetMs;
    const transcript = await playEpisode(env, {
      episodeId: 'autoplay',
      seed: request.seed,
      taskSeed: request.seed,
      row: request.row,
      maxTurns: request.maxTurns,
      actor: (agent, observation, episodeId) => {
        if (Date.now() > deadline) {
          throw new SandboxError('timeout', 'autoplay', `the episode took longer than ${Math.round(request.budgetMs / 1000)} s and was stopped (each turn must be quick: training plays thousands)`, null, '');
        }
        return actors[agent](agent, observation, episodeId);
      },
    });
    const capped = {
      ...transcript,
      systemPrompts: Object.fromEntries(Object.entries(transcript.systemPrompts).map(([k, v]) => [k, cutText(v, MAX_TEXT)])),
      turns: transcript.turns.map((t) => ({ ...t, observation: cutText(t.observation, MAX_TEXT), action: cutText(t.action, MAX_TEXT), info: cutInfo(t.info) })),
      finalInfo: cutInfo(transcript.finalInfo),
    };
    return { ok: true, description, players: players as Record<string, PlayOpponent>, transcript: capped, logs: logs.drain() };
  } finally {
    await env.dispose();
  }
}
