/**
 * Play sessions inside a play process (play-process.ts): the user writes one seat's actions, the
 * environment's bots (or random play) write the others', in the same sandbox and with the same
 * limits as training. Errors of the environment's code end the session and come back located in
 * the user's files; nothing here throws for the user's code. Also "let a bot play": one whole
 * episode as a transcript. A seat may also be played by a saved checkpoint (checkpoint-player.ts:
 * loaded once per process, played with training's prompts, masking and temperature).
 */
import { Rng, hash32 } from '../../sdk/environment/rng';
import { type Json } from '../../sdk/environment/schema';
import type { CompileDiagnostic, EndReason, EnvironmentDescription, SandboxErrorJson } from '../../sdk/dry-run-report';
import type { AutoplayRequest, AutoplayResult, PlayOpenRequest, PlayOpenResult, PlayOpponent, PlayPlayer, PlayRefusal, PlayStepResult, PlayTurn } from '../../sdk/play';
import type { CheckpointSeat, SeatTurn } from './checkpoint-player';
import { cutText } from './cut-text';
import { randomTextActor } from './dry-run';
import { type Actor, type ActorTurn, playEpisode } from './play-episode';
import { SandboxError } from './sandbox/errors';
import { type EnvironmentHandle } from './environment-handle';
import { openEnvironment } from './open-environment';
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

async function load(request: Pick<PlayOpenRequest, 'source' | 'served'>, logs: LogBuffer): Promise<{ ok: true; env: EnvironmentHandle } | Failed> {
  try {
    // Served over HTTP: its servers play (a server that is down is the load error, naming its URL).
    const loaded = request.served
      ? await openEnvironment(request.served, request.source, { jobId: 'play', secrets: request.served.secrets, warn: (message) => logs.add([message]) })
      : await SandboxEnvironment.load(request.source, { onLogs: logs.add });
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

/** The checkpoints that play seats of one episode, loaded; released once the episode is over. */
class CheckpointSeats {
  private constructor(
    readonly seats: Record<string, CheckpointSeat>,
    private readonly releaseAll: () => void,
  ) {}

  /** Loads the checkpoints `players` names (tfjs is imported only when one does), or says why one cannot be played. */
  static async hold(env: EnvironmentHandle, players: Record<string, PlayPlayer>, request: Pick<PlayOpenRequest, 'checkpoints' | 'sampling' | 'seed'>): Promise<CheckpointSeats | PlayRefusal> {
    const wanted = Object.entries(players).flatMap(([agent, p]) => ('checkpointId' in p ? [[agent, p.checkpointId] as const] : []));
    if (wanted.length === 0) return new CheckpointSeats({}, () => {});
    const sampling = request.sampling;
    if (!sampling) return { refused: 'a checkpoint seat needs the sampling settings' };
    const { CheckpointRefused, CheckpointSeat, acquireCheckpoint, releaseCheckpoint } = await import('./checkpoint-player');
    const held: Awaited<ReturnType<typeof acquireCheckpoint>>[] = [];
    const release = () => held.splice(0).forEach(releaseCheckpoint);
    const seats: Record<string, CheckpointSeat> = {};
    try {
      for (const [agent, checkpointId] of wanted) {
        const checkpoint = request.checkpoints?.[checkpointId];
        if (!checkpoint) return (release(), { refused: `checkpoint ${checkpointId} was not sent with the request` });
        const h = await acquireCheckpoint(checkpointId, checkpoint);
        held.push(h);
        const seed = hash32(request.seed + 7919 * env.description.agents.indexOf(agent));
        seats[agent] = new CheckpointSeat(h, `checkpoint ${checkpointId} (${agent})`, env.description, sampling, seed);
      }
    } catch (e) {
      release();
      if (e instanceof CheckpointRefused) return { refused: e.message };
      throw e;
    }
    return new CheckpointSeats(seats, release);
  }

  /** Why a checkpoint cannot play this episode (tokenizer, context), judged on its first prompt. */
  mismatch(systemPrompts: Record<string, string>, first: AgentTurnMessage): PlayRefusal | null {
    for (const [agent, seat] of Object.entries(this.seats)) {
      const why = seat.mismatch({ systemPrompt: systemPrompts[agent] ?? '', observation: first.observation, actions: first.actions, role: 'user' });
      if (why) return { refused: why };
    }
    return null;
  }

  release(): void {
    this.releaseAll();
  }
}

/** What plays a seat the user does not: the first bot that is not "random", else random play (as training's evaluations choose). */
function defaultOpponent(description: EnvironmentDescription): PlayOpponent {
  const bot = description.bots.find((b) => b !== 'random') ?? description.bots[0];
  return bot ? { bot } : { random: true };
}

/** A seat's move: the text, and a checkpoint's log-probability of it. */
type SeatActor = (agent: string, observation: string, episodeId: string, turn: ActorTurn) => Promise<{ text: string; logprob?: number }>;

function actorFor(env: EnvironmentHandle, player: PlayOpponent, seed: number, agent: string, checkpoints: CheckpointSeats): SeatActor {
  if ('checkpointId' in player) {
    const seat = checkpoints.seats[agent];
    return (_agent, observation, _episodeId, turn) => seat.act({ ...turn, observation } satisfies SeatTurn);
  }
  const bot = 'bot' in player ? player.bot : env.description.bots.includes('random') ? 'random' : null;
  if (bot) return async (_agent, _observation, episodeId) => ({ text: await env.bot({ episodeId, bot }) });
  // Each seat its own stream, fixed by the episode's seed.
  const random: Actor = randomTextActor(new Rng(hash32(seed + env.description.agents.indexOf(agent))), env.description);
  return async (...args) => ({ text: await random(...args) });
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
  private readonly actors: Record<string, SeatActor>;
  /** Whether the current observation is a tool's result (a model's prompt says so). */
  private role: ActorTurn['role'] = 'user';

  private constructor(
    private readonly sessionId: string,
    private readonly env: EnvironmentHandle,
    private readonly seat: string,
    private readonly players: Record<string, PlayPlayer>,
    private readonly maxTurns: number,
    private readonly logs: LogBuffer,
    private readonly systemPrompts: Record<string, string>,
    private readonly checkpoints: CheckpointSeats,
    first: AgentTurnMessage,
    seed: number,
  ) {
    this.current = first;
    this.returns = Object.fromEntries(env.description.agents.map((a) => [a, 0]));
    this.actors = Object.fromEntries(
      Object.entries(players).flatMap(([agent, p]) => ('user' in p ? [] : [[agent, actorFor(env, p, seed, agent, checkpoints)]])),
    );
  }

  /** Opens a session: loads the environment, resets an episode and lets the bots play up to the user's first turn. */
  static async open(sessionId: string, request: PlayOpenRequest): Promise<{ session: PlaySessionRuntime | null; result: PlayOpenResult | PlayRefusal }> {
    const logs = new LogBuffer();
    const loaded = await load(request, logs);
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
    const checkpoints = await CheckpointSeats.hold(env, players as Record<string, PlayPlayer>, request);
    if (isRefusal(checkpoints)) {
      await env.dispose();
      return { session: null, result: checkpoints };
    }
    let reset;
    try {
      reset = await env.reset({ episodeId: sessionId, seed: request.seed, taskSeed: request.seed, row: request.row, ...(request.task !== undefined ? { task: request.task } : {}) });
    } catch (e) {
      checkpoints.release();
      await env.dispose();
      if (!(e instanceof SandboxError)) throw e;
      return { session: null, result: { ok: false, compileErrors: [], error: e.toJSON(), logs: logs.drain() } };
    }
    const mismatch = checkpoints.mismatch(reset.systemPrompts, reset.turn);
    if (mismatch) {
      checkpoints.release();
      await env.close(sessionId).catch(() => {});
      await env.dispose();
      return { session: null, result: mismatch };
    }
    const session = new PlaySessionRuntime(sessionId, env, seat, players as Record<string, PlayPlayer>, request.maxTurns, logs, reset.systemPrompts, checkpoints, reset.turn, request.seed);
    const error = await session.guard(async () => {
      await session.replay(request.prefix ?? []);
      return session.advance();
    });
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
    if (this.closed) return;
    this.closed = true;
    this.checkpoints.release();
    await this.env.close(this.sessionId).catch(() => {});
    await this.env.dispose();
  }

  private closed = false;

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

  /** A branch's moves, as they were played in its match, whoever's turn each was. */
  private async replay(prefix: string[]): Promise<void> {
    for (const action of prefix) {
      if (this.done) return;
      await this.play(this.current.agent, action);
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
      const turn = { systemPrompt: this.systemPrompts[agent] ?? '', actions: this.current.actions, role: this.role };
      const { text, logprob } = await this.actors[agent](agent, this.current.observation, this.sessionId, turn);
      played.push(await this.play(agent, text, logprob));
    }
    return played;
  }

  private async play(agent: string, action: string, logprob?: number): Promise<PlayTurn> {
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
      ...(logprob !== undefined ? { logprob } : {}),
      next: r.next ? { agent: r.next.agent, observation: cutText(r.next.observation, MAX_TEXT) } : null,
    };
    this.history.push(turn);
    this.role = r.tool ? 'tool' : 'user';
    if (r.next) this.current = r.next;
    else {
      this.done = true;
      this.endReason = r.terminated ? 'terminated' : 'truncated';
    }
    return turn;
  }
}

/** A request found unplayable in the middle of an episode (a checkpoint that cannot read the environment). */
class Unplayable extends Error {}

/**
 * One whole episode, every seat played by `policy` unless `opponents` names another player for it.
 * The environment's code and its bots have the dry run's budget; checkpoints' sampling has twice
 * that again, apart (a model's turn is slower than a bot's, and is not the environment's fault).
 */
export async function autoplay(request: AutoplayRequest): Promise<AutoplayResult | PlayRefusal> {
  const logs = new LogBuffer();
  const loaded = await load(request, logs);
  if (!loaded.ok) return loaded;
  const { env } = loaded;
  let checkpoints: CheckpointSeats | null = null;
  try {
    const description = env.description;
    if ('bot' in request.policy && !description.bots.includes(request.policy.bot)) {
      return { refused: `${description.name} has no bot "${request.policy.bot}"; ${description.bots.length > 0 ? `its bots are ${description.bots.join(', ')}` : 'it has none: choose random play'}` };
    }
    const players = choosePlayers(description, { ...request.opponents }, () => request.policy);
    if (isRefusal(players)) return players;
    const refusal = missingRow(description, request.row);
    if (refusal) return refusal;
    const held = await CheckpointSeats.hold(env, players, request);
    if (isRefusal(held)) return held;
    checkpoints = held;
    const actors = Object.fromEntries(Object.entries(players).map(([agent, p]) => [agent, actorFor(env, p as PlayOpponent, request.seed, agent, held)]));
    const checked = new Set<string>();
    let deadline = Date.now() + request.budgetMs;
    let modelMs = 0;
    let turnIndex = 0;
    const seconds = (ms: number) => Math.round(ms / 1000);
    let transcript;
    try {
      transcript = await playEpisode(env, {
        episodeId: 'autoplay',
        seed: request.seed,
        taskSeed: request.seed,
        row: request.row,
        task: request.task,
        maxTurns: request.maxTurns,
        actor: async (agent, observation, episodeId, turn) => {
          // A branch: its match's moves first, as they were played.
          const index = turnIndex++;
          if (request.prefix && index < request.prefix.length) return request.prefix[index];
          if (Date.now() > deadline) {
            throw new SandboxError('timeout', 'autoplay', `the episode took longer than ${seconds(request.budgetMs)} s and was stopped (each turn must be quick: training plays thousands)`, null, '');
          }
          const seat = held.seats[agent];
          if (!seat) return (await actors[agent](agent, observation, episodeId, turn)).text;
          if (!checked.has(agent)) {
            checked.add(agent);
            const why = seat.mismatch({ ...turn, observation });
            if (why) throw new Unplayable(why);
          }
          const started = Date.now();
          const { text } = await actors[agent](agent, observation, episodeId, turn);
          const took = Date.now() - started;
          modelMs += took;
          deadline += took;
          if (modelMs > 2 * request.budgetMs) {
            throw new SandboxError('timeout', 'autoplay', `the checkpoints took longer than ${seconds(2 * request.budgetMs)} s in all to play this episode, so it was stopped: play fewer turns, or a smaller checkpoint`, null, '');
          }
          return text;
        },
      });
    } catch (e) {
      if (e instanceof Unplayable) return { refused: e.message };
      throw e;
    }
    const capped = {
      ...transcript,
      systemPrompts: Object.fromEntries(Object.entries(transcript.systemPrompts).map(([k, v]) => [k, cutText(v, MAX_TEXT)])),
      turns: transcript.turns.map((t) => ({ ...t, observation: cutText(t.observation, MAX_TEXT), action: cutText(t.action, MAX_TEXT), info: cutInfo(t.info) })),
      finalInfo: cutInfo(transcript.finalInfo),
    };
    return { ok: true, description, players: players as Record<string, PlayOpponent>, transcript: capped, logs: logs.drain() };
  } finally {
    checkpoints?.release();
    await env.dispose();
  }
}
