/**
 * Keeps a child process running, as a process supervisor does: when it exits without being asked
 * to, the exit is logged with its code or signal and the child is started again after a backoff
 * that doubles from `minDelayMs` to `maxDelayMs` (and starts over once a child has run for
 * `stableMs`), so a worker that crashes at once does not spin. `npm start` supervises its local
 * worker with it; the worker's jobs come back through the lease path.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

export interface SuperviseOptions {
  name: string;
  command: string;
  args: string[];
  spawnOptions: SpawnOptions;
  log: (line: string) => void;
  /** Called with each new child (to relay its output). */
  onStart?: (child: ChildProcess) => void;
  minDelayMs?: number;
  maxDelayMs?: number;
  stableMs?: number;
}

export interface Supervised {
  /** The running child, if any. */
  readonly child: ChildProcess | null;
  /** How many times the child was started. */
  readonly starts: number;
  /** Stops supervising, then asks the child to stop (SIGTERM) and kills it after `graceMs`. */
  stop(graceMs: number): Promise<void>;
  /** Stops supervising and kills the child at once. */
  kill(): void;
}

export function supervise(o: SuperviseOptions): Supervised {
  const minDelay = o.minDelayMs ?? 1_000;
  const maxDelay = o.maxDelayMs ?? 30_000;
  const stable = o.stableMs ?? 60_000;
  let delay = minDelay;
  let stopping = false;
  let restartTimer: NodeJS.Timeout | null = null;
  let current: { child: ChildProcess; exited: Promise<void> } | null = null;
  let starts = 0;

  const start = () => {
    restartTimer = null;
    if (stopping) return;
    const startedAt = Date.now();
    const child = spawn(o.command, o.args, o.spawnOptions);
    starts++;
    const exited = new Promise<void>((resolve) =>
      child.on('exit', (code, signal) => {
        resolve();
        if (current?.child === child) current = null;
        if (stopping) return;
        if (Date.now() - startedAt >= stable) delay = minDelay;
        o.log(`${o.name} exited (${signal ? `signal ${signal}` : `exit code ${code}`}); restarting in ${(delay / 1000).toFixed(1)} s`);
        restartTimer = setTimeout(start, delay);
        delay = Math.min(maxDelay, delay * 2);
      }),
    );
    child.on('error', (e) => o.log(`${o.name} could not start: ${e.message}`));
    current = { child, exited };
    o.onStart?.(child);
  };
  start();

  return {
    get child() {
      return current?.child ?? null;
    },
    get starts() {
      return starts;
    },
    async stop(graceMs: number) {
      stopping = true;
      if (restartTimer) clearTimeout(restartTimer);
      const running = current;
      if (!running || running.child.exitCode !== null || running.child.signalCode !== null) return;
      running.child.kill('SIGTERM');
      const timer = setTimeout(() => running.child.kill('SIGKILL'), graceMs);
      await running.exited;
      clearTimeout(timer);
    },
    kill() {
      stopping = true;
      if (restartTimer) clearTimeout(restartTimer);
      current?.child.kill('SIGKILL');
    },
  };
}
