/**
 * `whetstone doctor`: what a worker on this machine would compute with. The check belongs to the
 * worker (gpu-worker/engine/doctor.ts, `npm run worker -- --check`); the CLI runs it as a child
 * process rather than importing the engine, so the SDK stays free of it (and of tfjs).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError, EXIT } from '../errors';
import type { CommandContext } from './context';

const DAEMON = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../gpu-worker/daemon.ts');

interface Check {
  backend: string;
  adapter: string | null;
  devices: { kind: string; name: string; memoryBytes: number }[];
  skipped: string[];
  kernels: string | null;
  native: { loaded: true; kernel: string; threads: number; features: string[] } | { loaded: false; reason: string } | null;
  threads: number;
  matmulGflops: number;
  matmulSize: number;
}

function runCheck(env: Record<string, string | undefined>, signal?: AbortSignal): Promise<Check> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', DAEMON, '--check'], { cwd: path.dirname(path.dirname(DAEMON)), env: env as NodeJS.ProcessEnv, signal, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new CliError(`the worker's check failed (exit ${code})`, EXIT.CHECK_FAILED, err.trim().split('\n').slice(-3)));
      try {
        resolve(JSON.parse(out.slice(out.indexOf('{'))) as Check);
      } catch {
        reject(new CliError('the worker\'s check printed no result', EXIT.CHECK_FAILED, err.trim().split('\n').slice(-3)));
      }
    });
  });
}

export async function doctorCommand(ctx: CommandContext): Promise<number> {
  if (!existsSync(DAEMON)) {
    throw new CliError('doctor runs beside the worker\'s code, which this installation lacks', EXIT.USAGE, ['run it in a Whetstone checkout (npm ci), where workers run']);
  }
  const check = await runCheck(ctx.io.env, ctx.io.signal);
  ctx.out.document(check);
  const rows: [string, string][] = [
    ['backend', `${check.backend} (${check.devices.map((d) => d.name).join(', ')})`],
    ...(check.adapter ? [['adapter', check.adapter] as [string, string]] : []),
    ...(check.kernels ? [['kernels', check.kernels] as [string, string]] : []),
    ['threads', String(check.threads)],
    ['matmul', `${check.matmulGflops} GFLOP/s (${check.matmulSize}³, float32)`],
    ...check.skipped.map((s, i) => [i === 0 ? 'skipped' : '', s] as [string, string]),
  ];
  for (const [label, value] of rows) ctx.out.line(`${label.padEnd(9)} ${value}`);
  return EXIT.OK;
}
