import type { CliIO } from '../../cli/io';
import { main } from '../../cli/main';

/**
 * Runs the CLI's main function with captured output, as a test would see a process. `onStdout`
 * sees the output as it is written (a test waits for a line rather than for a while).
 */
export async function runCapture(argv: string[], opts: { env: Record<string, string | undefined>; cwd: string; signal?: AbortSignal; onStdout?: (text: string) => void; stdin?: string }) {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: { write: (s: string) => ((stdout += s), opts.onStdout?.(s)) },
    stderr: { write: (s: string) => (stderr += s) },
    env: opts.env,
    cwd: opts.cwd,
    isTTY: false,
    signal: opts.signal,
    ...(opts.stdin === undefined ? {} : { stdin: (async function* () { yield opts.stdin!; })() }),
  };
  const started = Date.now();
  const code = await main(argv, io);
  return { code, stdout, stderr, ms: Date.now() - started, json: () => JSON.parse(stdout) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
}
