/**
 * Starts a process of the worker's runtime by path (gpu-worker/runtime/dry-run-process.ts,
 * play-process.ts): user code runs there, never on the server's event loop, and the server never
 * imports the runtime. The process speaks over IPC and says `{ type: 'ready' }` once it listens.
 */
import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../paths';

export interface RuntimeProcess {
  child: ChildProcess;
  /** Resolves when the process is ready for commands, or has exited (its exit handler answers then). */
  ready: Promise<void>;
}

export function forkRuntime(relativePath: string, memoryMb: number): RuntimeProcess {
  const child = fork(path.join(repoRoot, relativePath), [], {
    cwd: repoRoot,
    execArgv: ['--import', 'tsx', `--max-old-space-size=${memoryMb}`],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
  });
  const ready = new Promise<void>((resolve) => {
    child.on('message', (message: { type?: string }) => message?.type === 'ready' && resolve());
    child.once('exit', () => resolve());
  });
  return { child, ready };
}

/**
 * One command to a fresh process of `relativePath`, and its one answer (a message with `ok`): the
 * engine's model checks and exports. The process is killed once answered; a process that exits,
 * cannot be sent to, or takes longer than `ms` is answered by `failed` instead — never by an
 * exception (a send to a process that died at its start would otherwise throw on the event loop).
 */
export function askRuntime<A extends { ok: boolean }>(relativePath: string, memoryMb: number, command: unknown, ms: number, failed: (why: { timedOut: boolean; code: number | null }) => A): Promise<A> {
  const { child } = forkRuntime(relativePath, memoryMb);
  return new Promise<A>((resolve) => {
    let settled = false;
    const finish = (answer: A) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill();
      resolve(answer);
    };
    const timer = setTimeout(() => finish(failed({ timedOut: true, code: null })), ms);
    child.on('error', () => finish(failed({ timedOut: false, code: child.exitCode })));
    child.once('exit', (code) => finish(failed({ timedOut: false, code })));
    child.on('message', (message: { type?: string; ok?: boolean } | null) => {
      if (message?.type === 'ready') {
        if (!child.connected) return finish(failed({ timedOut: false, code: child.exitCode }));
        child.send(command as object, (err) => err && finish(failed({ timedOut: false, code: child.exitCode })));
      } else if (message && typeof message.ok === 'boolean') finish(message as A);
    });
  });
}
