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
