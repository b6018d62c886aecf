import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import next from 'next';
import type { NextHandler } from './http';
import { repoRoot } from './paths';
import { buildServiceWorker } from './service-worker-build';

// The Next.js app runs inside our one HTTP server (a custom server). In production mode it
// needs a build (`next build`, then the service worker: service-worker-build.ts); `npm start`
// builds when the sources changed since the last build, while the server already answers health,
// tRPC and socket.io.

const BUILD_INPUTS = ['app', 'public', 'sdk', 'next.config.ts', 'tsconfig.json', 'package-lock.json'];
const stampFile = path.join(repoRoot, '.next', 'whetstone-inputs.sha256');

function hashInputs(): string {
  const hash = createHash('sha256');
  const visit = (rel: string) => {
    const abs = path.join(repoRoot, rel);
    if (!fs.existsSync(abs)) return;
    const stat = fs.statSync(abs);
    if (stat.isDirectory()) {
      for (const name of fs.readdirSync(abs).sort()) {
        if (name === 'node_modules' || name.endsWith('.test.ts')) continue;
        visit(path.join(rel, name));
      }
    } else {
      hash.update(rel).update('\0').update(fs.readFileSync(abs)).update('\0');
    }
  };
  BUILD_INPUTS.forEach(visit);
  return hash.digest('hex');
}

function buildIsCurrent(): boolean {
  return (
    fs.existsSync(path.join(repoRoot, '.next', 'BUILD_ID')) &&
    fs.existsSync(stampFile) &&
    fs.readFileSync(stampFile, 'utf8') === hashInputs()
  );
}

/** Runs `next build` when the sources changed; resolves when a current build exists. */
export async function ensureNextBuild(log: (line: string) => void, signal?: AbortSignal): Promise<void> {
  if (buildIsCurrent()) return;
  const inputs = hashInputs();
  log('building the web app (first start, or the sources changed)…');
  const started = Date.now();
  const output: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'node_modules/next/dist/bin/next'), 'build'], {
      cwd: repoRoot,
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      signal, // a server stopped mid-build stops its build too
      killSignal: 'SIGKILL',
    });
    const keep = (chunk: Buffer) => output.push(chunk.toString());
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (error) => reject(signal?.aborted ? new Error('build stopped') : error));
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`next build failed (exit ${code}):\n${output.join('').slice(-4000)}`)),
    );
  });
  const sw = await buildServiceWorker(repoRoot);
  fs.writeFileSync(stampFile, inputs);
  log(`web app built in ${((Date.now() - started) / 1000).toFixed(1)} s (service worker precaches ${sw.precached} files, ${(sw.bytes / 1024 ** 2).toFixed(1)} MB)`);
}

export interface NextApp {
  handle: NextHandler;
  upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => Promise<void>;
  close: () => Promise<void>;
}

export async function startNext(opts: { dev: boolean; hostname: string; port: number }): Promise<NextApp> {
  const app = next({ dev: opts.dev, dir: repoRoot, hostname: opts.hostname, port: opts.port, customServer: true });
  await app.prepare();
  const handle = app.getRequestHandler();
  const upgrade = app.getUpgradeHandler();
  return {
    handle: (req, res) => handle(req, res),
    upgrade: (req, socket, head) => upgrade(req, socket, head),
    close: () => app.close(),
  };
}
