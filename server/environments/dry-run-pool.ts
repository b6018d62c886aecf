/**
 * Dry runs of saved environments run in a small pool of processes (gpu-worker/runtime/
 * dry-run-process.ts, started by path), never on the server's event loop: an environment whose
 * steps are slow, that eats memory or writes huge observations stalls only its own process, which
 * is stopped at the run's budget and replaced. At most `processes` run at once in the
 * installation and `perTeam` for one team; the rest wait in order, and a report says how long it
 * waited and behind how many.
 */
import type { ChildProcess } from 'node:child_process';
import {
  type DryRunProcessCommand,
  type DryRunProcessMessage,
  type DryRunReport,
  type DryRunRequest,
  type EnvironmentDescription,
  stoppedReport,
  tooLongError,
} from '../../sdk/dry-run-report';
import { forkRuntime } from './fork-runtime';

export interface DryRunPoolOptions {
  /** Dry-run processes at most, installation-wide. Default 2: one per core of a small server. */
  processes?: number;
  /** Dry runs of one team at once. Default 1: one team's many saves cannot hold every process. */
  perTeam?: number;
  /** A dry run's whole budget. Default 10 s: an environment slower than that stalls training. */
  budgetMs?: number;
  /** After the budget, how long a process may take to answer before it is stopped. Default 2 s. */
  graceMs?: number;
  /** Heap of a dry-run process (QuickJS's own limit is per sandbox). Default 512 MB. */
  memoryMb?: number;
  /**
   * How long the type check may still run once the dry run has ended: past it the process is
   * stopped and the report says so. The process stops a check after 8 s of checking itself; this
   * is the backstop for a process that does not answer (and allows a cold process to load
   * TypeScript on a busy machine). Default 60 s.
   */
  typeCheckMs?: number;
  /** Dry runs waiting, installation-wide, before saves are refused. Default 200. */
  maxWaiting?: number;
}

/** The save cannot be dry-run now: too many are waiting. */
export class DryRunQueueFull extends Error {}

interface Waiting {
  teamId: string;
  request: Omit<DryRunRequest, 'timeBudgetMs'>;
  budgetMs: number;
  resolve: (report: DryRunReport) => void;
  queuedAt: number;
  ahead: number;
}

interface Slot {
  child: ChildProcess;
  ready: Promise<void>;
  /** Being stopped: takes no new run. */
  dying: boolean;
  job:
    | (Waiting & {
        id: number;
        startedAt: number;
        progress: { episodes: number; description: EnvironmentDescription | null };
        timer: NodeJS.Timeout;
        /** The report before its type check, once the process has sent it. */
        partial: DryRunReport | null;
      })
    | null;
}

const PROCESS_PATH = 'gpu-worker/runtime/dry-run-process.ts';
/** How long a new process may take to come up before its first run is given up. */
const BOOT_MS = 30_000;

export class DryRunPool {
  private readonly o: Required<DryRunPoolOptions>;
  private readonly slots: Slot[] = [];
  private readonly waiting: Waiting[] = [];
  private nextId = 1;
  private closed = false;

  constructor(options: DryRunPoolOptions = {}) {
    this.o = { processes: 2, perTeam: 1, budgetMs: 10_000, graceMs: 2_000, memoryMb: 512, maxWaiting: 200, typeCheckMs: 60_000, ...options };
  }

  /** Dry-runs an environment for a team; resolves with its report (never rejects for the user's code). */
  run(teamId: string, request: Omit<DryRunRequest, 'timeBudgetMs'>, options: { budgetMs?: number } = {}): Promise<DryRunReport> {
    if (this.closed) return Promise.reject(new Error('the dry-run pool is closed'));
    if (this.waiting.length >= this.o.maxWaiting) return Promise.reject(new DryRunQueueFull(`${this.waiting.length} dry runs are waiting; try again in a minute`));
    return new Promise((resolve) => {
      this.waiting.push({ teamId, request, budgetMs: options.budgetMs ?? this.o.budgetMs, resolve, queuedAt: Date.now(), ahead: this.waiting.length + this.running().length });
      this.dispatch();
    });
  }

  /** Starts a process ahead of the first save, so that it has loaded TypeScript by then. */
  warm(): void {
    if (this.closed || this.slots.length > 0) return;
    const slot = this.spawn();
    const command: DryRunProcessCommand = { type: 'warm' };
    // A send to a process that is going (the pool closed while it started: a Ctrl-C during
    // start-up) fails; with no callback the failure is an 'error' event that ends the server.
    void slot.ready.then(() => !slot.job && !slot.dying && slot.child.connected && slot.child.send(command, () => {}));
  }

  /** Stops every process; waiting dry runs are answered as not run. */
  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.resolve(stoppedReport(crashError('the server is stopping'), { episodes: 0, description: null }, 0));
    await Promise.all(this.slots.map((slot) => this.stop(slot)));
  }

  private running() {
    return this.slots.flatMap((s) => (s.job ? [s.job] : []));
  }

  private dispatch(): void {
    for (;;) {
      const busy = new Map<string, number>();
      for (const job of this.running()) busy.set(job.teamId, (busy.get(job.teamId) ?? 0) + 1);
      const next = this.waiting.findIndex((w) => (busy.get(w.teamId) ?? 0) < this.o.perTeam);
      if (next < 0) return;
      const slot = this.slots.find((s) => !s.job && !s.dying) ?? (this.slots.length < this.o.processes ? this.spawn() : null);
      if (!slot) return;
      const [job] = this.waiting.splice(next, 1);
      this.start(slot, job);
    }
  }

  private spawn(): Slot {
    const { child, ready } = forkRuntime(PROCESS_PATH, this.o.memoryMb);
    const slot: Slot = { child, ready, dying: false, job: null };
    child.on('message', (message: DryRunProcessMessage) => {
      if (message.type === 'ready') return;
      const job = slot.job;
      if (!job || message.id !== job.id) return;
      if (message.type === 'progress') job.progress = { episodes: message.episodes, description: message.description };
      else if (message.type === 'checking-types') {
        job.partial = message.report;
        clearTimeout(job.timer);
        job.timer = setTimeout(() => this.expire(slot, job.id), this.o.typeCheckMs);
      } else this.finish(slot, { ...message.report, queue: { waitedMs: job.startedAt - job.queuedAt, ahead: job.ahead } });
    });
    child.on('exit', (code, signal) => {
      this.slots.splice(this.slots.indexOf(slot), 1);
      const job = slot.job;
      if (job) {
        const how = signal ? `signal ${signal}` : `exit code ${code}`;
        if (job.partial) this.answer(job, typeCheckStopped(job, `the type check's process stopped (${how})`));
        else this.answer(job, stoppedReport(crashError(`the dry run's process stopped (${how}): did the environment use too much memory?`), job.progress, Date.now() - job.startedAt));
        slot.job = null;
      }
      if (!this.closed) this.dispatch();
    });
    this.slots.push(slot);
    return slot;
  }

  private start(slot: Slot, waiting: Waiting): void {
    const id = this.nextId++;
    // A new process starts first (node, tsx, the runtime's imports: seconds on a busy machine), which
    // is not the environment's time: its budget runs from when the run is sent. Until then, a
    // process that never comes up is stopped after BOOT_MS.
    const timer = setTimeout(() => this.expire(slot, id), waiting.budgetMs + this.o.graceMs + BOOT_MS);
    slot.job = { ...waiting, id, startedAt: Date.now(), progress: { episodes: 0, description: null }, timer, partial: null };
    const command: DryRunProcessCommand = { type: 'run', id, request: { ...waiting.request, timeBudgetMs: waiting.budgetMs } };
    void slot.ready.then(() => {
      const job = slot.job;
      if (job?.id !== id) return;
      clearTimeout(job.timer);
      job.timer = setTimeout(() => this.expire(slot, id), waiting.budgetMs + this.o.graceMs);
      // A process that has gone answers through its exit handler; the failed send is not an error event.
      slot.child.send(command, () => {});
    });
  }

  /**
   * The run outlasted its budget inside one episode, or its type check outlasted its own: stop the
   * process (a new one takes the next run) and answer with what is known.
   */
  private expire(slot: Slot, id: number): void {
    const job = slot.job;
    if (!job || job.id !== id) return;
    slot.job = null;
    slot.dying = true;
    if (job.partial) this.answer(job, typeCheckStopped(job, `the type check took longer than ${Math.round(this.o.typeCheckMs / 1000)} s and was stopped`));
    else this.answer(job, stoppedReport(tooLongError(job.progress.episodes, job.request.episodes, job.budgetMs), job.progress, Date.now() - job.startedAt));
    slot.child.kill('SIGKILL');
  }

  private finish(slot: Slot, report: DryRunReport): void {
    const job = slot.job!;
    slot.job = null;
    this.answer(job, report);
    this.dispatch();
  }

  private answer(job: NonNullable<Slot['job']>, report: DryRunReport): void {
    clearTimeout(job.timer);
    job.resolve(report);
  }

  private async stop(slot: Slot): Promise<void> {
    slot.dying = true;
    if (slot.child.exitCode !== null || slot.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => slot.child.once('exit', () => resolve()));
    slot.child.kill('SIGKILL');
    await exited;
  }
}

/** The dry run's own report, when only the type check after it failed: the run stands, without type errors. */
function typeCheckStopped(job: { partial: DryRunReport | null; startedAt: number; queuedAt: number; ahead: number }, why: string): DryRunReport {
  const report = job.partial!;
  return { ...report, warnings: [...report.warnings, `${why}: no type errors are shown`], queue: { waitedMs: job.startedAt - job.queuedAt, ahead: job.ahead } };
}

function crashError(message: string) {
  return { kind: 'crash' as const, during: 'dry run', message, location: null, userStack: '', episodes: 0 };
}
