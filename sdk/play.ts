// Play sessions: a user acts as the agent in the real sandbox, turn by turn (the play console),
// or watches one episode played by a bot ("Let the base policy play"). The server's `play` router
// answers with these types; the sessions run in processes apart from the server
// (server/play/play-sessions.ts starts gpu-worker/runtime/play-process.ts by path), which speak the
// messages at the end of this file.
import type { CompileDiagnostic, EndReason, EnvironmentDescription, SandboxErrorJson, ToolCallRecord, Transcript } from './dry-run-report';
import type { Json } from './environment/schema';

/** Who plays a seat that is not the user's: one of the environment's bots, or random play. */
export type PlayOpponent = { bot: string } | { random: true };

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

/** `play.autoplay`: one whole episode played by a bot (checkpoints: not yet), or why it could not be opened. */
export type AutoplayResult =
  | { ok: true; description: EnvironmentDescription; players: Record<string, PlayOpponent>; transcript: Transcript; logs: string[] }
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

export interface PlayOpenRequest {
  source: { files: Record<string, string>; entry: string };
  maxTurns: number;
  seat?: string;
  opponents?: Record<string, PlayOpponent>;
  seed: number;
  /** The dataset row, for data-dependent environments. */
  row?: Json;
}

export interface AutoplayRequest {
  source: { files: Record<string, string>; entry: string };
  maxTurns: number;
  /**
   * Plays every seat not in `opponents`. The extension point for checkpoints: a `{ checkpointId }`
   * policy needs a model that samples, which lives on a worker (a sampler job), not here.
   */
  policy: PlayOpponent;
  opponents?: Record<string, PlayOpponent>;
  seed: number;
  row?: Json;
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
