import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { it } from 'vitest';
import { freePort } from '../../server/db/embedded';
import { repoRoot } from '../../server/paths';
import { waitUntil } from '../../server/test-support/reliability/harness';

// The documented example game servers in another language (examples/http-environments/: a math
// game, math_server.py, and a two-player grid game, tictactoe_server.py; FastAPI), for the tests
// that hold Whetstone's HTTP client and jobs to the protocol. Without Python's FastAPI and uvicorn those tests are skipped with a message here, and
// fail under CI=true (.ci/run installs them).

const EXAMPLES = path.join(repoRoot, 'examples/http-environments');
const probe = spawnSync('python3', ['-c', 'import fastapi, uvicorn'], { encoding: 'utf8' });

/** Python with FastAPI and uvicorn is here. */
export const pythonAvailable = probe.status === 0;

/** Call at a test file's top level: says why the Python tests cannot run (a failing test under CI). */
export function reportPythonMissing(what: string): void {
  if (pythonAvailable) return;
  const why = probe.error ? `python3 is not installed (${probe.error.message})` : probe.stderr.trim().split('\n').pop();
  if (process.env.CI === 'true') {
    it('needs Python with FastAPI and uvicorn (.ci/run installs them)', () => {
      throw new Error(`${what} cannot run: ${why}. Run: python3 -m pip install fastapi uvicorn`);
    });
  } else {
    console.warn(`[skipped] ${what}: ${why}. To run it: python3 -m pip install fastapi uvicorn`);
  }
}

/** Starts an example server (`math`, `tictactoe`) on a free port; up once /health answers. */
export async function startPythonExample(name: 'math' | 'tictactoe' = 'math'): Promise<{ url: string; close: () => void }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn('python3', [path.join(EXAMPLES, `${name}_server.py`), '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  // Python and FastAPI's imports take their time on a loaded machine.
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`the example server exited ${code}:\n${output}`))));
  exited.catch(() => {}); // once it is up, its exit at the end is no failure
  await Promise.race([exited, waitUntil('the example server to answer /health', () => fetch(`${url}/health`).then((r) => r.ok), 110_000)]);
  return { url, close: () => void child.kill() };
}
