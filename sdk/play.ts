// Play sessions: a user acts as the agent in the real sandbox, turn by turn (the play console),
// or watches one episode played by a bot or a checkpoint ("Let the base policy play"). The server's `play` router
// answers with these types; the sessions run in processes apart from the server
// (server/play/play-sessions.ts starts gpu-worker/runtime/play-process.ts by path), which speak the
// messages at the end of this file.
import { capText } from './limits';
import { matchWinner } from './live';
import type { CompileDiagnostic, EndReason, EnvironmentDescription, SandboxErrorJson, ToolCallRecord, Transcript } from './dry-run-report';
import type { Json } from './environment/schema';
import type { Manifest } from './manifest';

/**
 * Who plays a seat that is not the user's: one of the environment's bots, random play, or a saved
 * checkpoint of the team's (played on the CPU of the team's play process, with training's prompt
 * format, legal-move masking and the manifest's temperature: gpu-worker/runtime/checkpoint-player.ts).
 */
export type PlayOpponent = { bot: string } | { random: true } | { checkpointId: string };

/**
 * The largest checkpoint a play process plays, in parameters: its weights live in the process
 * (a few hundred MB in all), beside the sandboxes of the team's sessions. Larger ones are refused
 * with this figure; evaluate them with an EVAL job or open them in the playground.
 */
export const PLAY_MAX_PARAMETERS = 8_000_000;

/** Why a checkpoint is too large to play (the server judges by its bytes, the play process by its count). */
export function playCheckpointTooLarge(checkpointId: string, parameters: number): string {
  const millions = (n: number) => `${(n / 1e6).toFixed(n < 1e7 ? 1 : 0)}M`;
  return `checkpoint ${checkpointId} has about ${millions(parameters)} parameters; the play console plays checkpoints of at most ${millions(PLAY_MAX_PARAMETERS)} (it runs them on the server's CPU): evaluate it with an EVAL job, or open it in the playground`;
}

/**
 * Who wrote a turn's action. `{ random: true }` plays the environment's bot named "random" when it
 * has one (a random legal move), and random short texts otherwise (as the dry run does).
 */
export type PlayPlayer = { user: true } | PlayOpponent;

/** One turn of a play session: an agent's action and what the environment answered. */
export interface PlayTurn {
  /** The agent who acted. */
  agent: string;
  by: PlayPlayer;
  /** What the agent saw before acting. */
  observation: string;
  action: string;
  /** This turn's reward of every agent. */
  rewards: Record<string, number>;
  terminated: boolean;
  truncated: boolean;
  /**
   * The environment's details (JSON). Gomoku puts the move here: `{ player, move: [row, col]
   * (1-based), moveNumber }`, with `result` and `reason` when the game ends; its board is the
   * task's `size` and the moves so far.
   */
  info: Record<string, Json>;
  /** Present when the action was a tool call. */
  tool: ToolCallRecord | null;
  /** A checkpoint's turn: the log-probability of the tokens it wrote (under its own sampling distribution). */
  logprob?: number;
  /** The next agent to act and what it sees; null when the episode ended with this turn. */
  next: { agent: string; observation: string } | null;
}

/** The state of a session after `open`. */
export interface PlaySession {
  sessionId: string;
  description: EnvironmentDescription;
  /** The agent the user plays. */
  seat: string;
  /** Who plays every other seat. */
  opponents: Record<string, PlayOpponent>;
  /** The user's seat's system prompt for this episode. */
  systemPrompt: string;
  /** The episode's task (a generated task, or the dataset row). */
  task: Json;
  seed: number;
  /** What the user's seat sees now; null once the episode has ended. */
  observation: string | null;
  /** Turns played so far, by every agent (the length of the history). */
  turn: number;
  done: boolean;
  /** Why the episode ended; null while it goes on. */
  endReason: EndReason | null;
  /** Each agent's rewards summed so far. */
  returns: Record<string, number>;
  /** The turns so far: those of bots that played before the user's first turn. */
  history: PlayTurn[];
  /** Turns each agent may take (the manifest's limits.maxTurns). */
  maxTurns: number;
  /** The session ends after this long without a step. */
  idleMs: number;
  /** An error of the environment's code (in reset, or a bot's first turns): the session has ended. */
  error: SandboxErrorJson | null;
  /** Console output of the environment's code. */
  logs: string[];
}

/** `play.open`: a session, or why the environment could not be opened (no session then). */
export type PlayOpenResult =
  | ({ ok: true } & PlaySession)
  | { ok: false; compileErrors: CompileDiagnostic[]; error: SandboxErrorJson | null; logs: string[] };

/** `play.step`: the user's turn, the bots' turns after it, and where the episode stands. */
export interface PlayStepResult {
  /** A game of several agents, once ended: the match it was saved as (it opens in the replay). */
  matchId?: string;
  /** The user's turn; null when the environment's code threw on the action (see `error`). */
  turn: PlayTurn | null;
  /** What the other seats played after the user, up to the user's next turn or the end. */
  botTurns: PlayTurn[];
  /** What the user's seat sees now; null once the episode has ended. */
  observation: string | null;
  turnCount: number;
  done: boolean;
  endReason: EndReason | null;
  returns: Record<string, number>;
  /** The environment's code failed (at the user's line): the session has ended. */
  error: SandboxErrorJson | null;
  logs: string[];
}

/** `play.autoplay`: one whole episode played by a bot, random play or a checkpoint, or why it could not be opened. */
export type AutoplayResult =
  | { ok: true; description: EnvironmentDescription; players: Record<string, PlayOpponent>; transcript: Transcript; logs: string[]; matchId?: string }
  | { ok: false; compileErrors: CompileDiagnostic[]; error: SandboxErrorJson | null; logs: string[] };

/** `play.list`: the caller's open sessions in a team. */
export interface PlaySessionSummary {
  sessionId: string;
  seat: string;
  environment: string;
  openedAt: string;
  lastActiveAt: string;
}

// ---- between the server and a play process

/**
 * What a play process needs to play the checkpoints a request names, by checkpoint id: the bytes
 * (the server reads them from its blob store; the process keeps one loaded model per storage key
 * while sessions use it, so the bytes of one it holds are not parsed again).
 */
export interface PlayCheckpoint {
  storageKey: string;
  bytes: Uint8Array;
}

/** How checkpoints sample, as training's rollouts do (the manifest's limits and training options). */
export interface PlaySampling {
  maxTokensPerTurn: number;
  maxResponseTokens: number;
  temperature: number;
  maskActions: boolean;
}

/** An environment served over HTTP (its manifest's `server`): what the play process opens instead of the code. */
export interface PlayServed {
  name: string;
  kind: Manifest['kind'];
  agents: string[];
  server: NonNullable<Manifest['server']>;
  /** The team's values of the secrets the server's headers name (sdk/team-secrets.ts). */
  secrets?: Record<string, string>;
}

export interface PlayOpenRequest {
  source: { files: Record<string, string>; entry: string };
  served?: PlayServed;
  maxTurns: number;
  /** The checkpoints `opponents` names. */
  checkpoints?: Record<string, PlayCheckpoint>;
  sampling?: PlaySampling;
  seat?: string;
  opponents?: Record<string, PlayOpponent>;
  seed: number;
  /** The dataset row, for data-dependent environments. */
  row?: Json;
  /** The task of a data-free environment, given instead of sampled (a branch plays its match's task). */
  task?: Json;
  /** Actions played first, in turn order, whoever's turn it is (a branch the user plays a side of). */
  prefix?: string[];
}

export interface AutoplayRequest {
  source: { files: Record<string, string>; entry: string };
  served?: PlayServed;
  maxTurns: number;
  /** Plays every seat not in `opponents`. */
  policy: PlayOpponent;
  /** The checkpoints `policy` and `opponents` name. */
  checkpoints?: Record<string, PlayCheckpoint>;
  sampling?: PlaySampling;
  opponents?: Record<string, PlayOpponent>;
  seed: number;
  row?: Json;
  /** The task of a data-free environment, given instead of sampled (a branch plays its match's task). */
  task?: Json;
  /** Actions played first, in turn order, whoever's turn it is (a branch replays its match up to its move). */
  prefix?: string[];
  /** Past this, the episode stops with a timeout error. */
  budgetMs: number;
}

/** A request the process refuses: a seat or bot that does not exist, a missing dataset row. */
export interface PlayRefusal {
  refused: string;
}

export type PlayProcessCommand =
  | { type: 'open'; id: number; sessionId: string; request: PlayOpenRequest }
  | { type: 'step'; id: number; sessionId: string; action: string }
  | { type: 'close'; id: number; sessionId: string }
  | { type: 'autoplay'; id: number; request: AutoplayRequest };

/** The process's answer to each command, by id. */
export type PlayProcessAnswer =
  | { type: 'opened'; result: PlayOpenResult | PlayRefusal }
  | { type: 'stepped'; result: PlayStepResult }
  | { type: 'closed' }
  | { type: 'autoplayed'; result: AutoplayResult | PlayRefusal };

export type PlayProcessMessage = { type: 'ready' } | { type: 'answer'; id: number; answer: PlayProcessAnswer };

/** How a match record names who played a seat (as the runner's: "bot:<name>", a checkpoint, the user). */
function playerPolicy(p: PlayPlayer): string {
  if ('user' in p) return 'user';
  if ('bot' in p) return `bot:${p.bot}`;
  if ('checkpointId' in p) return `checkpoint:${p.checkpointId}`;
  return 'random';
}

/**
 * A game played in the play console as a match record (sdk/live.ts's matchItemSchema, as the
 * runner writes them), so that it lists with the team's matches and opens in the replay.
 */
export function playedMatch(game: { agents: string[]; players: Record<string, PlayPlayer>; turns: PlayTurn[]; endReason: EndReason | null; returns: Record<string, number>; task: Json; error?: string | null }) {
  const last = game.turns[game.turns.length - 1];
  const finalInfo = last?.info ?? {};
  return {
    agents: game.agents.map((name) => ({ name, policy: playerPolicy(game.players[name] ?? { random: true }) })),
    moves: game.turns.map((t, index) => ({ index, agent: t.agent, text: capText(t.action), byBot: !('user' in t.by), observation: capText(t.observation), rewards: t.rewards, info: t.info })),
    result: { endReason: game.endReason ?? 'error', returns: game.returns, info: finalInfo, task: game.task, ...(game.error ? { error: game.error } : {}) },
    winner: matchWinner(finalInfo, game.returns),
  };
}
