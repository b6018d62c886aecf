import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './test-support/test-database';
import { ensureNextBuild } from './next-app';
import { repoRoot } from './paths';
import { waitUntil } from './test-support/reliability/harness';

// `npm start` as a user runs it: a real process, real PostgreSQL, real signals.

interface Started {
  child: ChildProcess;
  output: () => string;
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
}

/** Every server these tests started: one a failed test left running is stopped after them. */
const started: ChildProcess[] = [];

/** `npm start`; `ownGroup` makes it lead a process group, as a shell's foreground job does. */
function start(env: Record<string, string>, ownGroup = false): Started {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: repoRoot,
    env: { ...process.env, DATABASE_URL: '', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: ownGroup,
  });
  started.push(child);
  let output = '';
  const waiters: Array<() => void> = [];
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    waiters.forEach((w) => w());
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  // 'close', not 'exit': the last lines of output may arrive after the process has exited.
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const waitFor = (pattern: RegExp, timeoutMs = 60_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const m = output.match(pattern);
        if (m) resolve(m);
      };
      waiters.push(check);
      check();
      setTimeout(() => reject(new Error(`timed out waiting for ${pattern}; output:\n${output}`)), timeoutMs);
    });
  return { child, output: () => output, waitFor, exited };
}

/** The pid of the local worker daemon `npm start` (pid `parent`) runs. */
function localWorkerPid(parent: number): number {
  const lines = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(parent)], { encoding: 'utf8' }).split('\n');
  const line = lines.find((l) => l.includes('gpu-worker/daemon.ts'));
  if (!line) throw new Error(`no worker among the children of ${parent}:\n${lines.join('\n')}`);
  return Number(line.trim().split(/\s+/)[0]);
}

const homes: string[] = [];
function tempHome(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-home-'));
  fs.chmodSync(dir, 0o755);
  homes.push(dir);
  return dir;
}
afterAll(async () => {
  // Ctrl-C first (the server stops its worker and database), then SIGKILL for one that does not answer.
  const running = started.filter((c) => c.exitCode === null && c.signalCode === null);
  await Promise.all(
    running.map(
      (c) =>
        new Promise<void>((resolve) => {
          const kill = setTimeout(() => c.kill('SIGKILL'), 20_000);
          c.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          c.kill('SIGINT');
        }),
    ),
  );
  homes.forEach((h) => fs.rmSync(h, { recursive: true, force: true }));
}, 60_000);

/** Whether process `pid` runs (a zombie, exited but not yet reaped, does not). */
function running(pid: number): boolean {
  try {
    return !execFileSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' }).trim().startsWith('Z');
  } catch {
    return false; // ps exits 1 when there is no such process
  }
}

/** The processes `parent` started (the embedded PostgreSQL, the local worker, dry-run processes). */
function childrenOf(parent: number): Array<{ pid: number; args: string }> {
  let out: string;
  try {
    out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(parent)], { encoding: 'utf8' });
  } catch {
    return []; // none
  }
  return out.split('\n').filter((l) => l.trim()).map((l) => {
    const [pid, ...args] = l.trim().split(/\s+/);
    return { pid: Number(pid), args: args.join(' ') };
  });
}

/**
 * Ctrl-C: to the server, or (`group`) to its whole process group, as a terminal sends it. Once it
 * has exited, none of the processes it had started is left running.
 */
async function stop(s: Started, group = false): Promise<{ code: number | null }> {
  const children = childrenOf(s.child.pid!);
  if (group) process.kill(-s.child.pid!, 'SIGINT');
  else s.child.kill('SIGINT');
  // Bounded, so that a server that does not stop fails here with what it said, not as a time-out;
  // loosely, since a Ctrl-C during start-up first lets the step under way (Next.js's start) end.
  const code = await Promise.race([s.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 90_000))]);
  if (code === 'running') {
    s.child.kill('SIGKILL');
    throw new Error(`the server did not exit within 90 s of SIGINT; output:\n${s.output()}`);
  }
  const left = children.filter((c) => running(c.pid));
  if (left.length) throw new Error(`left running after the server exited: ${left.map((c) => `${c.pid} ${c.args}`).join('; ')}; the server said:\n${s.output()}`);
  return { code };
}

describe('npm start', () => {
  // The web app is built once, before these tests, with a bound that a loaded machine's first
  // `next build` fits (minutes on a fresh clone): the tests below time `npm start`, not the build.
  beforeAll(async () => {
    await ensureNextBuild(() => {});
  }, 1_800_000);

  it('starts on the embedded PostgreSQL, serves health and the web app, stops on Ctrl-C, and keeps its data', async () => {
    const home = tempHome();
    const first = start({ WHETSTONE_HOME: home });
    const [, url] = await first.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    expect(first.output()).toMatch(/first start: created the owner account/);
    const link = (await first.waitFor(/(http:\/\/\S+\/api\/auth\/local-sign-in\?token=\S+)/))[1];
    const health = await (await fetch(`${url}/api/health`)).json();
    expect(health).toMatchObject({ status: 'ok', database: { reachable: true, embedded: true }, migrations: { pending: 0 } });
    await first.waitFor(/web app ready/, 240_000);
    // The local worker daemon registers into the shared pool and heartbeats.
    const deadline = Date.now() + 60_000;
    let online = 0;
    while (Date.now() < deadline && online === 0) {
      online = (await (await fetch(`${url}/api/health`)).json()).workers.online;
      if (!online) await new Promise((r) => setTimeout(r, 250));
    }
    expect(online).toBe(1);
    // The worker is supervised: killed, it is logged with its signal and started again. (Its
    // process is looked for until it is there: the pool counts a worker online from its last
    // heartbeat, which may come from one the supervisor is starting again.)
    const workerPid = await waitUntil('the local worker among the server’s children', async () => {
      try {
        return localWorkerPid(first.child.pid!);
      } catch {
        return null;
      }
    }, 60_000).catch((error: unknown) => {
      throw new Error(`${String(error)}; the server said:\n${first.output().slice(-6000)}`);
    });
    const connected = () => (first.output().match(/\[worker\].*connected for pushes/g) ?? []).length;
    // Killed once it is connected: a line it writes after the count would pass for the new one's.
    await first.waitFor(/\[worker\].*connected for pushes/, 60_000);
    const before = connected();
    process.kill(workerPid, 'SIGKILL');
    await first.waitFor(/the local worker exited \(signal SIGKILL\); restarting in/);
    await waitUntil('the restarted worker connected', async () => connected() > before, 60_000);
    const restarted = await waitUntil('the restarted worker among the server’s children', async () => {
      try {
        const pid = localWorkerPid(first.child.pid!);
        return pid !== workerPid ? pid : null;
      } catch {
        return null;
      }
    }, 60_000);
    expect(restarted).not.toBe(workerPid);
    const local = JSON.parse(fs.readFileSync(path.join(home, 'local-credentials.json'), 'utf8'));
    expect(local.apiKey).toMatch(/^wsk_/);
    expect(fs.statSync(path.join(home, 'local-credentials.json')).mode & 0o077).toBe(0);
    const home1 = await fetch(`${url}/`);
    expect(home1.status).toBe(200);
    expect(await home1.text()).toContain('Whetstone');
    // The sign-in link gives a session as the owner.
    const signIn = await fetch(link, { redirect: 'manual' });
    expect(signIn.status).toBe(302);
    expect(signIn.headers.get('set-cookie')).toMatch(/session_token/);
    const stopped = await stop(first);
    expect(stopped.code).toBe(0);
    expect(first.output()).toMatch(/stopped/);

    const second = start({ WHETSTONE_HOME: home }, true);
    const [, url2] = await second.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    expect(second.output()).not.toMatch(/first start/);
    expect(second.output()).toMatch(/database schema current/);
    const link2 = (await second.waitFor(/(http:\/\/\S+\/api\/auth\/local-sign-in\?token=\S+)/))[1];
    const cookie = (await fetch(link2, { redirect: 'manual' })).headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const me = await (await fetch(`${url2}/api/trpc/account.me`, { headers: { cookie } })).json();
    expect(me.result.data.json.user.email).toBe('owner@localhost');
    expect(me.result.data.json.teams).toHaveLength(1);
    const teamId = me.result.data.json.teams[0].id;
    const envs = await (
      await fetch(`${url2}/api/trpc/environments.list?input=${encodeURIComponent(JSON.stringify({ json: { teamId } }))}`, { headers: { cookie } })
    ).json();
    expect(envs.result.data.json.map((e: { name: string }) => e.name).sort()).toEqual(['bandit', 'gomoku', 'math', 'math-tools']);
    // A terminal's Ctrl-C reaches the embedded PostgreSQL too: the stop is still clean and quiet.
    const printed = second.output().length;
    expect((await stop(second, true)).code).toBe(0);
    const stopping = second.output().slice(printed);
    expect(stopping).toMatch(/stopped/);
    expect(stopping).not.toMatch(/connection lost|\[realtime\]|\[trpc\]|Error|error:/);
  }, 300_000);

  // A signal that arrives while Next.js starts (synchronous work) is dispatched later; replacing the
  // handlers then once dropped it, and the server ran on after Ctrl-C.
  it('answers Ctrl-C at any moment of start-up', async () => {
    const home = tempHome();
    const first = start({ WHETSTONE_HOME: home });
    await first.waitFor(/web app ready/, 240_000);
    expect((await stop(first)).code, `the server said:\n${first.output()}`).toBe(0);
    // At each line start-up writes (the database is open; migrated; serving, with the scheduler
    // and the local worker starting), and at moments after the sign-in link (the local worker
    // probing its backend, Next.js building its check or starting).
    const moments: Array<{ line: RegExp; afterMs: number }> = [
      { line: /embedded PostgreSQL running/, afterMs: 0 },
      { line: /database schema current/, afterMs: 0 },
      { line: /listening on/, afterMs: 0 },
      ...[0, 100, 200, 250, 300, 400, 600].map((afterMs) => ({ line: /local-sign-in\?token=\S+/, afterMs })),
    ];
    for (const { line, afterMs } of moments) {
      const s = start({ WHETSTONE_HOME: home });
      await s.waitFor(line);
      await new Promise((r) => setTimeout(r, afterMs));
      const moment = `Ctrl-C ${afterMs} ms after ${line.source}`;
      const stopped = await stop(s);
      expect(stopped.code, `${moment}; the server said:\n${s.output()}`).toBe(0);
      expect(s.output(), moment).toMatch(/stopped/);
      // The embedded PostgreSQL removes its pid file as it stops: none was left running.
      expect(fs.existsSync(path.join(home, 'pg', 'postmaster.pid')), moment).toBe(false);
    }
  }, 900_000);

  it('uses DATABASE_URL when it is set', async () => {
    const t = await createTestDatabase({ migrated: false });
    try {
      const s = start({ WHETSTONE_HOME: tempHome(), DATABASE_URL: t.url });
      const [, url] = await s.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      expect(s.output()).toMatch(/using DATABASE_URL/);
      const health = await (await fetch(`${url}/api/health`)).json();
      expect(health.database.embedded).toBe(false);
      expect(await t.db.user.count({ where: { email: 'owner@localhost' } })).toBe(1);
      expect((await stop(s)).code).toBe(0);
    } finally {
      await t.drop();
    }
  }, 120_000);

  // It exits rather than retrying for ever (the test's own time-out is the bound: how fast is
  // a figure for a loaded machine to spoil, not a test's business).
  it('exits 1 naming host and port when DATABASE_URL is unreachable', async () => {
    const s = start({ WHETSTONE_HOME: tempHome(), DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none' });
    expect(await s.exited).toBe(1);
    expect(s.output()).toMatch(/Cannot connect to PostgreSQL at 127\.0\.0\.1:1/);
    expect(s.output()).toMatch(/is PostgreSQL running/);
  }, 60_000);

  it('exits 1 with a clear message when the port is in use', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const s = start({ WHETSTONE_HOME: tempHome(), PORT: String(port) });
      expect(await s.exited).toBe(1);
      expect(s.output()).toMatch(new RegExp(`Port ${port} on 127.0.0.1 is in use`));
    } finally {
      blocker.close();
    }
  }, 20_000);

  it('refuses a damaged data folder with its path, and deletes nothing', async () => {
    const home = tempHome();
    fs.mkdirSync(path.join(home, 'pg'));
    fs.writeFileSync(path.join(home, 'pg', 'precious.txt'), 'keep me');
    const s = start({ WHETSTONE_HOME: home });
    expect(await s.exited).toBe(1);
    expect(s.output()).toContain(`${path.join(home, 'pg')} is not a usable PostgreSQL data folder`);
    expect(fs.readFileSync(path.join(home, 'pg', 'precious.txt'), 'utf8')).toBe('keep me');
  }, 20_000);

  // As root, PostgreSQL runs as "postgres", which must be able to enter the home folder.
  it.runIf(process.getuid?.() === 0)('as root, says which folder the embedded PostgreSQL cannot enter, and how to open it', async () => {
    const home = tempHome();
    fs.chmodSync(home, 0o700);
    const s = start({ WHETSTONE_HOME: home });
    expect(await s.exited).toBe(1);
    expect(s.output()).toContain(`${home} (mode 700) does not let other users in.`);
    expect(s.output()).toContain(`Run chmod o+x ${home}`);
  }, 20_000);

  it('exits 1 naming a bad environment variable', async () => {
    const s = start({ WHETSTONE_HOME: tempHome(), PORT: 'abc' });
    expect(await s.exited).toBe(1);
    expect(s.output()).toMatch(/PORT="abc"/);
  }, 20_000);
});
