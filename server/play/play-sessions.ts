/**
 * Play sessions (the play console): a user acts as an agent in the real sandbox, turn by turn. The
 * sessions run in play processes (gpu-worker/runtime/play-process.ts, started by path), one per
 * team with sessions, so that one team's environment that loops or dies never stalls the server or
 * another team's sessions. This module keeps who owns which session, the caps, idle expiry, and
 * what a session that ended became (so that a late step hears why, not just "not found").
 *
 * Sessions live in this server's memory: with several server replicas, a team's play requests must
 * reach the replica that opened the session (sticky routing), or open a new one.
 */
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import type { SandboxErrorJson } from '../../sdk/dry-run-report';
import type {
  AutoplayRequest,
  AutoplayResult,
  PlayOpenRequest,
  PlayOpenResult,
  PlayProcessAnswer,
  PlayProcessCommand,
  PlayProcessMessage,
  PlayRefusal,
  PlaySessionSummary,
  PlayPlayer,
  PlayStepResult,
  PlayTurn,
} from '../../sdk/play';
import { type playedMatch } from '../../sdk/play';
import type { Json } from '../../sdk/environment/schema';
import { forkRuntime } from '../environments/fork-runtime';

export interface PlaySessionsOptions {
  /** Open sessions of one team. Default 4. */
  perTeam?: number;
  /** Open sessions installation-wide. Default 32. */
  maxSessions?: number;
  /** A session without a step for this long ends. Default 10 minutes. */
  idleMs?: number;
  /** A command (open, step, autoplay) running longer stops the team's process, ending its sessions. Default 30 s. */
  commandMs?: number;
  /** One autoplayed episode's budget. Default 10 s, as a dry run's. */
  autoplayBudgetMs?: number;
  /** A team's process with no session is stopped after this long. Default 60 s. */
  lingerMs?: number;
  /** Heap of a play process (QuickJS's own limit is per sandbox). Default 384 MB. */
  memoryMb?: number;
}

/** A request refused with a reason the caller can act on; the router maps `code` to tRPC's. */
export class PlayRefused extends Error {
  constructor(
    readonly code: 'BAD_REQUEST' | 'NOT_FOUND' | 'CONFLICT' | 'TOO_MANY_REQUESTS',
    message: string,
  ) {
    super(message);
  }
}

const PROCESS_PATH = 'gpu-worker/runtime/play-process.ts';
/** Ended sessions remembered for their reason. */
const MAX_ENDED = 1_000;

type Command = PlayProcessCommand extends infer C ? (C extends PlayProcessCommand ? Omit<C, 'id'> : never) : never;

interface Pending {
  command: Command;
  resolve: (answer: PlayProcessAnswer) => void;
  timer: NodeJS.Timeout | null;
}

interface TeamProcess {
  teamId: string;
  child: ChildProcess;
  ready: Promise<void>;
  pending: Map<number, Pending>;
  sessions: Set<string>;
  linger: NodeJS.Timeout | null;
  /** Why the server stopped it, for the sessions it ends. */
  stoppedBecause: string | null;
  exited: boolean;
}

interface Session {
  id: string;
  teamId: string;
  userId: string;
  environment: string;
  seat: string;
  openedAt: Date;
  lastActiveAt: Date;
  idle: NodeJS.Timeout | null;
  busy: boolean;
  process: TeamProcess;
  /** The game so far, for its match record once it ends. */
  game: { agents: string[]; players: Record<string, PlayPlayer>; turns: PlayTurn[]; task: Json };
  /** The saved version it plays (null for the editor's draft). */
  versionId: string | null;
  /** The match and move it branched from, when it continues a recorded game. */
  parent: { matchId: string; move: number } | undefined;
}

/** A game of several agents that ended in a step: what its match record is made of. */
export interface FinishedGame {
  game: Parameters<typeof playedMatch>[0];
  versionId: string | null;
  /** The match and move it branched from, if any: the game is kept as a variation of it. */
  parent: { matchId: string; move: number } | undefined;
}

export class PlaySessions {
  private readonly o: Required<PlaySessionsOptions>;
  private readonly processes = new Map<string, TeamProcess>();
  private readonly sessions = new Map<string, Session>();
  private readonly ended = new Map<string, { teamId: string; userId: string; why: string }>();
  /** Opens under way, per team: they hold a place under the caps. */
  private readonly opening = new Map<string, number>();
  private readonly autoplaying = new Set<string>();
  private nextId = 1;
  private closed = false;

  constructor(options: PlaySessionsOptions = {}) {
    this.o = { perTeam: 4, maxSessions: 32, idleMs: 10 * 60_000, commandMs: 30_000, autoplayBudgetMs: 10_000, lingerMs: 60_000, memoryMb: 384, ...options };
  }

  /** Opens a session for a user of a team; compile and load errors come back in the result (no session then). */
  async open(teamId: string, userId: string, environment: string, request: PlayOpenRequest, versionId: string | null = null, parent?: { matchId: string; move: number }): Promise<PlayOpenResult> {
    this.refuseIfClosed();
    const team = [...this.sessions.values()].filter((s) => s.teamId === teamId).length + (this.opening.get(teamId) ?? 0);
    if (team >= this.o.perTeam) {
      throw new PlayRefused('TOO_MANY_REQUESTS', `${team} play sessions are open in this team (at most ${this.o.perTeam}): close one, or wait for an idle one to end`);
    }
    const all = this.sessions.size + [...this.opening.values()].reduce((a, b) => a + b, 0);
    if (all >= this.o.maxSessions) throw new PlayRefused('TOO_MANY_REQUESTS', `the server has ${all} play sessions open (at most ${this.o.maxSessions}): try again in a few minutes`);
    this.opening.set(teamId, (this.opening.get(teamId) ?? 0) + 1);
    const sessionId = randomUUID();
    const process = this.processFor(teamId);
    try {
      const answer = await this.send(process, { type: 'open', sessionId, request });
      const result = refusedOr(answer.type === 'opened' ? answer.result : null);
      if (result.ok && !result.done) {
        const now = new Date();
        const players: Record<string, PlayPlayer> = { ...result.opponents, [result.seat]: { user: true } };
        const game = { agents: result.description.agents, players, turns: [...result.history], task: result.task };
        const session: Session = { id: sessionId, teamId, userId, environment, seat: result.seat, openedAt: now, lastActiveAt: now, idle: null, busy: false, process, game, versionId, parent };
        this.sessions.set(sessionId, session);
        process.sessions.add(sessionId);
        this.touch(session);
      } else if (result.ok) {
        this.remember(sessionId, teamId, userId, `the episode ended before your first turn (${result.endReason})`);
      }
      return result.ok ? { ...result, idleMs: this.o.idleMs } : result;
    } finally {
      this.opening.set(teamId, (this.opening.get(teamId) ?? 1) - 1);
      this.retireIfIdle(process);
    }
  }

  /** The user's action in a session; the bots' turns after it come back with it, and the whole game once a game of several agents ends. */
  async step(teamId: string, userId: string, sessionId: string, action: string): Promise<{ result: PlayStepResult; finished: FinishedGame | null }> {
    const session = this.owned(teamId, userId, sessionId);
    if (session.busy) throw new PlayRefused('CONFLICT', 'the previous action of this session is still being played: wait for its answer');
    session.busy = true;
    if (session.idle) clearTimeout(session.idle);
    try {
      const answer = await this.send(session.process, { type: 'step', sessionId, action });
      if (answer.type !== 'stepped') throw new Error(`a play process answered a step with ${answer.type}`);
      const result = answer.result;
      session.game.turns.push(...(result.turn ? [result.turn] : []), ...result.botTurns);
      // (A process that stopped has ended its sessions already, saying why.)
      if (result.done && this.sessions.get(sessionId) === session) this.end(session, result.error ? `the environment failed: ${result.error.message}` : `the episode ended (${result.endReason})`, false);
      else this.touch(session);
      const finished =
        result.done && session.game.agents.length > 1 && session.game.turns.length > 0
          ? { game: { ...session.game, endReason: result.endReason, returns: result.returns, error: result.error?.message ?? null }, versionId: session.versionId, parent: session.parent }
          : null;
      return { result, finished };
    } finally {
      session.busy = false;
    }
  }

  /** Ends a session; closing one that already ended is not an error. */
  async close(teamId: string, userId: string, sessionId: string): Promise<{ closed: boolean }> {
    const session = this.sessions.get(sessionId);
    if (!session || session.teamId !== teamId || session.userId !== userId) {
      const ended = this.ended.get(sessionId);
      if (ended && ended.teamId === teamId && ended.userId === userId) return { closed: false };
      throw new PlayRefused('NOT_FOUND', 'No such play session');
    }
    this.end(session, 'it was closed', true);
    return { closed: true };
  }

  /** One whole episode played by bots or random play, as a transcript. */
  async autoplay(teamId: string, request: Omit<AutoplayRequest, 'budgetMs'>): Promise<AutoplayResult> {
    this.refuseIfClosed();
    if (this.autoplaying.has(teamId)) throw new PlayRefused('TOO_MANY_REQUESTS', 'an episode is already being played for this team: wait for it to finish');
    this.autoplaying.add(teamId);
    const process = this.processFor(teamId);
    try {
      const answer = await this.send(process, { type: 'autoplay', request: { ...request, budgetMs: this.o.autoplayBudgetMs } });
      return refusedOr(answer.type === 'autoplayed' ? answer.result : null);
    } finally {
      this.autoplaying.delete(teamId);
      this.retireIfIdle(process);
    }
  }

  /** The user's open sessions in a team, most recent first. */
  list(teamId: string, userId: string): PlaySessionSummary[] {
    return [...this.sessions.values()]
      .filter((s) => s.teamId === teamId && s.userId === userId)
      .sort((a, b) => b.openedAt.getTime() - a.openedAt.getTime())
      .map((s) => ({ sessionId: s.id, seat: s.seat, environment: s.environment, openedAt: s.openedAt.toISOString(), lastActiveAt: s.lastActiveAt.toISOString() }));
  }

  /** The process id holding a session (tests stop it to see its sessions end). */
  processIdOf(sessionId: string): number | null {
    return this.sessions.get(sessionId)?.process.child.pid ?? null;
  }

  /** Stops every play process; their sessions end. */
  async shutdown(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.processes.values()].map((p) => this.stop(p, 'the server is stopping')));
  }

  private refuseIfClosed(): void {
    if (this.closed) throw new PlayRefused('TOO_MANY_REQUESTS', 'the server is stopping');
  }

  private owned(teamId: string, userId: string, sessionId: string): Session {
    const session = this.sessions.get(sessionId);
    if (session && session.teamId === teamId && session.userId === userId) return session;
    const ended = this.ended.get(sessionId);
    if (ended && ended.teamId === teamId && ended.userId === userId) {
      throw new PlayRefused('NOT_FOUND', `This play session has ended: ${ended.why}. Open a new one.`);
    }
    throw new PlayRefused('NOT_FOUND', 'No such play session');
  }

  /** Restarts a session's idle clock. */
  private touch(session: Session): void {
    session.lastActiveAt = new Date();
    if (session.idle) clearTimeout(session.idle);
    session.idle = setTimeout(() => {
      if (!session.busy && this.sessions.get(session.id) === session) this.end(session, `it was idle for ${describeMs(this.o.idleMs)}`, true);
    }, this.o.idleMs);
    session.idle.unref();
  }

  /** Forgets a session, remembering why; `tellProcess` when the process still holds it. */
  private end(session: Session, why: string, tellProcess: boolean): void {
    if (session.idle) clearTimeout(session.idle);
    this.sessions.delete(session.id);
    session.process.sessions.delete(session.id);
    this.remember(session.id, session.teamId, session.userId, why);
    if (tellProcess && !session.process.exited) void this.send(session.process, { type: 'close', sessionId: session.id }).finally(() => this.retireIfIdle(session.process));
    else this.retireIfIdle(session.process);
  }

  private remember(sessionId: string, teamId: string, userId: string, why: string): void {
    this.ended.set(sessionId, { teamId, userId, why });
    if (this.ended.size > MAX_ENDED) this.ended.delete(this.ended.keys().next().value!);
  }

  private processFor(teamId: string): TeamProcess {
    const existing = this.processes.get(teamId);
    if (existing && !existing.exited && existing.stoppedBecause === null) {
      if (existing.linger) clearTimeout(existing.linger);
      existing.linger = null;
      return existing;
    }
    const { child, ready } = forkRuntime(PROCESS_PATH, this.o.memoryMb);
    const process: TeamProcess = { teamId, child, ready, pending: new Map(), sessions: new Set(), linger: null, stoppedBecause: null, exited: false };
    child.on('message', (message: PlayProcessMessage) => {
      if (message.type !== 'answer') return;
      const pending = process.pending.get(message.id);
      if (!pending) return;
      process.pending.delete(message.id);
      if (pending.timer) clearTimeout(pending.timer);
      pending.resolve(message.answer);
    });
    child.on('exit', (code, signal) => {
      process.exited = true;
      if (process.linger) clearTimeout(process.linger);
      if (this.processes.get(teamId) === process) this.processes.delete(teamId);
      const how = process.stoppedBecause ?? `the environment's process stopped (${signal ? `signal ${signal}` : `exit code ${code}`}): did the environment use too much memory?`;
      for (const id of process.sessions) {
        const session = this.sessions.get(id);
        if (session) this.end(session, how, false);
      }
      for (const [id, pending] of process.pending) {
        process.pending.delete(id);
        if (pending.timer) clearTimeout(pending.timer);
        pending.resolve(stoppedAnswer(pending.command, how));
      }
    });
    this.processes.set(teamId, process);
    return process;
  }

  private send(process: TeamProcess, command: Command): Promise<PlayProcessAnswer> {
    if (process.exited) return Promise.resolve(stoppedAnswer(command, process.stoppedBecause ?? "the environment's process has stopped"));
    const id = this.nextId++;
    return new Promise((resolve) => {
      process.pending.set(id, { command, resolve, timer: null });
      void process.ready.then(() => {
        const pending = process.pending.get(id);
        if (process.exited || !pending) return;
        // Timed from the send, not the process's start (seconds on a busy machine).
        pending.timer = setTimeout(() => {
          void this.stop(process, `a request took longer than ${describeMs(this.o.commandMs)}, so the environment's process was stopped`);
        }, this.o.commandMs);
        pending.timer.unref();
        // A channel that closed meanwhile fails here; the exit handler answers the command.
        process.child.send({ ...command, id } as PlayProcessCommand, () => {});
      });
    });
  }

  /** A team's process with nothing to do is stopped after a while (a new open starts another). */
  private retireIfIdle(process: TeamProcess): void {
    if (process.exited || process.sessions.size > 0 || process.pending.size > 0 || (this.opening.get(process.teamId) ?? 0) > 0) return;
    if (process.linger) clearTimeout(process.linger);
    process.linger = setTimeout(() => {
      if (process.sessions.size === 0 && process.pending.size === 0) void this.stop(process, 'the team had no play session');
    }, this.o.lingerMs);
    process.linger.unref();
  }

  private async stop(process: TeamProcess, why: string): Promise<void> {
    process.stoppedBecause ??= why;
    if (process.exited) return;
    const exited = new Promise<void>((resolve) => process.child.once('exit', () => resolve()));
    process.child.kill('SIGKILL');
    await exited;
  }
}

/** A process's answer, or the refusal it carries as an error for the caller. */
function refusedOr<T extends object>(result: T | PlayRefusal | null): T {
  if (result === null) throw new Error('a play process answered with the wrong kind of answer');
  if (typeof (result as { refused?: unknown }).refused === 'string') throw new PlayRefused('BAD_REQUEST', (result as PlayRefusal).refused);
  return result as T;
}

/** What a command gets when its process stopped before answering: the session has ended, saying why. */
function stoppedAnswer(command: Command, why: string): PlayProcessAnswer {
  const error: SandboxErrorJson = { kind: 'crash', during: command.type, message: why, location: null, userStack: '' };
  switch (command.type) {
    case 'open':
      return { type: 'opened', result: { ok: false, compileErrors: [], error, logs: [] } };
    case 'step':
      return { type: 'stepped', result: { turn: null, botTurns: [], observation: null, turnCount: 0, done: true, endReason: 'error', returns: {}, error, logs: [] } };
    case 'autoplay':
      return { type: 'autoplayed', result: { ok: false, compileErrors: [], error, logs: [] } };
    case 'close':
      return { type: 'closed' };
  }
}

function describeMs(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}`;
  return ms >= 1_000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}
