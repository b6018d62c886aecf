/**
 * docs/deploying.md's nginx site, as written there: `nginx -t` accepts it, and nginx started with
 * it proxies HTTPS and socket.io to two servers behind it — a WebSocket, and a connection that
 * begins with long-polling (the worker daemon's way), which needs the site's `ip_hash`: without
 * it the same connection fails. Only the addresses, ports and certificate paths are replaced
 * (local ones, a certificate made here). Needs nginx and openssl (.ci/run installs nginx);
 * without them this is skipped with a hint, except under CI=true, where it fails.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server } from 'socket.io';
import { io as connect, type Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const doc = fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), 'deploying.md'), 'utf8');

/** The fenced blocks of a language in the doc, unindented. */
function blocks(lang: string): string[] {
  return [...doc.matchAll(/^( *)```(\w+)\n([\s\S]*?)^\1```/gm)]
    .filter((m) => m[2] === lang)
    .map((m) => m[3].replace(new RegExp(`^ {0,${m[1].length}}`, 'gm'), ''));
}

const nginx = ['nginx', '/usr/sbin/nginx'].find((bin) => spawnSync(bin, ['-v']).status === 0);
const openssl = spawnSync('openssl', ['version']).status === 0;
const missing = [!nginx && 'nginx (apt-get install nginx-light)', !openssl && 'openssl (apt-get install openssl)'].filter(Boolean).join(' and ');
if (missing) {
  if (process.env.CI === 'true') {
    it('needs nginx and openssl to check the nginx site of docs/deploying.md (.ci/run installs nginx)', () => {
      throw new Error(`missing: ${missing}`);
    });
  } else {
    console.warn(`[skipped] the nginx site of docs/deploying.md: missing ${missing}`);
  }
}

/** A free local port (the listener closes at once; nothing else here takes ports meanwhile). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe.skipIf(Boolean(missing))("docs/deploying.md's nginx site", () => {
  const [site] = blocks('nginx');
  let tmp: string;
  let cert: string;
  let key: string;
  const backends: Array<{ http: http.Server; io: Server }> = [];
  const backendPorts: number[] = [];
  let running: ChildProcess | null = null;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-nginx-'));
    cert = path.join(tmp, 'cert.pem');
    key = path.join(tmp, 'key.pem');
    const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=whetstone.example.com'], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`openssl could not make a certificate: ${made.stderr}`);
    // Two "replicas": each answers health and socket.io, saying which it is.
    for (const replica of ['a', 'b']) {
      const server = http.createServer((req, res) => {
        res.writeHead(req.url === '/api/health' ? 200 : 404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ replica, url: req.url }));
      });
      const io = new Server(server, { path: '/socket.io', serveClient: false });
      io.on('connection', (socket) => socket.on('echo', (value: unknown, ack: (answer: unknown) => void) => ack({ replica, value })));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      backends.push({ http: server, io });
      backendPorts.push((server.address() as net.AddressInfo).port);
    }
  });

  afterAll(async () => {
    running?.kill('SIGTERM');
    for (const b of backends) {
      b.io.close();
      b.http.closeAllConnections();
    }
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  /** The site with local certificate paths (and, for a run, local ports), inside a minimal nginx.conf. */
  function config(name: string, ports?: { http: number; https: number }, change: (text: string) => string = (t) => t): string {
    let text = change(site)
      .replace(/ssl_certificate\s+\S+;/, `ssl_certificate ${cert};`)
      .replace(/ssl_certificate_key\s+\S+;/, `ssl_certificate_key ${key};`);
    if (ports) {
      let i = 0;
      text = text
        .replace(/listen 80;/, `listen 127.0.0.1:${ports.http};`)
        .replace(/listen 443 ssl;/, `listen 127.0.0.1:${ports.https} ssl;`)
        .replace(/server 10\.0\.0\.\d+:3000;/g, () => `server 127.0.0.1:${backendPorts[i++ % backendPorts.length]};`);
    }
    const dir = path.join(tmp, name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'site.conf'), text);
    const conf = path.join(dir, 'nginx.conf');
    fs.writeFileSync(
      conf,
      [
        `pid ${dir}/nginx.pid;`,
        `error_log ${dir}/error.log;`,
        'events {}',
        'http {',
        '  access_log off;',
        `  client_body_temp_path ${dir}/body;`,
        `  proxy_temp_path ${dir}/proxy;`,
        `  include ${dir}/site.conf;`,
        '}',
        '',
      ].join('\n'),
    );
    return conf;
  }

  const test = (conf: string) => spawnSync(nginx!, ['-e', 'stderr', '-t', '-c', conf], { encoding: 'utf8' });

  it('nginx -t accepts it; and refuses it without the WebSocket map (so the check checks)', () => {
    expect(site).toContain('proxy_set_header   Upgrade $http_upgrade;');
    const ok = test(config('as-written'));
    expect(ok.stderr).toContain('test is successful');
    expect(ok.status).toBe(0);
    const broken = test(config('no-map', undefined, (t) => t.replace(/map \$http_upgrade[\s\S]*?\n}\n/, '')));
    expect(broken.status).not.toBe(0);
    expect(broken.stderr).toContain('connection_upgrade');
  });

  /** Starts nginx with `conf` in the foreground and waits until its HTTPS port answers. */
  async function start(conf: string, httpsPort: number): Promise<ChildProcess> {
    const child = spawn(nginx!, ['-e', 'stderr', '-c', conf, '-g', 'daemon off; master_process off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // Until it listens (a condition, polled), within a minute however loaded the machine is.
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
      if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}`);
      const open = await new Promise<boolean>((resolve) => {
        const s = net.connect(httpsPort, '127.0.0.1', () => (s.destroy(), resolve(true)));
        s.on('error', () => resolve(false));
      });
      if (open) return child;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    child.kill('SIGKILL');
    throw new Error(`nginx did not listen on ${httpsPort}: ${stderr}`);
  }

  const get = (url: string) =>
    new Promise<{ status: number; location?: string; body: string }>((resolve, reject) => {
      const request = (url.startsWith('https') ? https : http).get(url, { rejectUnauthorized: false }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, location: res.headers.location, body }));
      });
      request.on('error', reject);
    });

  /** A socket.io connection through nginx: which transport it ended on and which replica answered, or the error. */
  async function through(httpsPort: number, transports: Array<'websocket' | 'polling'>): Promise<{ transport: string; answers: unknown[] } | { error: string }> {
    const socket: Socket = connect(`https://127.0.0.1:${httpsPort}`, { path: '/socket.io', transports, rejectUnauthorized: false, reconnection: false, timeout: 30_000 });
    try {
      await new Promise<void>((resolve, reject) => {
        socket.on('connect', () => resolve());
        socket.on('connect_error', reject);
      });
      if (transports[0] === 'polling') {
        // Let it upgrade to the WebSocket (or fail trying: the engine says which; the test's
        // own timeout bounds a proxy that answers neither way).
        await new Promise<void>((resolve, reject) => {
          if (socket.io.engine.transport.name === 'websocket') return resolve();
          socket.io.engine.once('upgrade', () => resolve());
          socket.io.engine.once('upgradeError', (e: Error) => reject(e));
        });
      }
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await socket.emitWithAck('echo', i));
      return { transport: socket.io.engine.transport.name, answers };
    } catch (error) {
      return { error: (error as Error).message };
    } finally {
      socket.close();
    }
  }

  it('proxies HTTPS and socket.io (a WebSocket, and long-polling upgraded) to the servers behind it', async () => {
    const ports = { http: await freePort(), https: await freePort() };
    running = await start(config('running', ports), ports.https);
    const redirect = await get(`http://127.0.0.1:${ports.http}/runs`);
    expect(redirect.status).toBe(301);
    expect(redirect.location).toBe('https://127.0.0.1/runs');
    const health = await get(`https://127.0.0.1:${ports.https}/api/health`);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body).url).toBe('/api/health');

    const ws = await through(ports.https, ['websocket']);
    expect(ws).toMatchObject({ transport: 'websocket', answers: [{ value: 0 }, { value: 1 }, { value: 2 }] });
    const polled = await through(ports.https, ['polling', 'websocket']);
    expect(polled).toMatchObject({ transport: 'websocket', answers: [{ value: 0 }, { value: 1 }, { value: 2 }] });
    // One replica answered all of one connection's messages.
    const replicas = new Set((polled as { answers: Array<{ replica: string }> }).answers.map((a) => a.replica));
    expect(replicas.size).toBe(1);
    running.kill('SIGTERM');
    running = null;
  });

  it('without ip_hash, a connection that begins with long-polling fails across two replicas', async () => {
    const ports = { http: await freePort(), https: await freePort() };
    running = await start(config('no-ip-hash', ports, (t) => t.replace(/\n\s*ip_hash;/, '')), ports.https);
    const polled = await through(ports.https, ['polling', 'websocket']);
    expect(polled).toHaveProperty('error');
    running.kill('SIGTERM');
    running = null;
  });
});
