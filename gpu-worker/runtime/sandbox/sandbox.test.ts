import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { compileEnvironment } from './compile';
import { SandboxError } from './errors';
import { SandboxEnvironment } from './sandbox-environment';

// One probe environment whose step misbehaves on command; every case is marked so the test can
// find the line the error must point at.
const PROBE = `import { defineEnvironment } from 'whetstone';

export default defineEnvironment<undefined, { n: number }>({
  name: 'probe',
  systemPrompt: 'probe',
  sample: () => undefined,
  reset(ctx) {
    ctx.state = { n: 0 };
    return 'go';
  },
  step(action, ctx) {
    ctx.state.n++;
    const g = globalThis as any;
    switch (action) {
      case 'ok': return { observation: 'fine', reward: 1, terminated: true };
      case 'throw': throw new Error('user boom'); // @throw
      case 'loop': while (ctx.state.n > 0) { ctx.state.n++; } // @loop (QuickJS places while(true) back-edges on the previous line)
      case 'recurse': { const f = (n: number): number => f(n + 1) + 1; return { observation: String(f(0)), reward: 0, terminated: false }; } // @recurse
      case 'memory': { const a: string[] = []; while (a.length >= 0) a.push('y'.repeat(100000) + a.length); } // @memory
      case 'huge': return { observation: 'x'.repeat(3000000), reward: 0, terminated: false };
      case 'nan': return { observation: '', reward: NaN, terminated: true };
      case 'no-reward': return { observation: '', terminated: true } as unknown as { observation: string; reward: number; terminated: boolean };
      case 'text-reward': return { observation: '', reward: 'high' as unknown as number, terminated: true };
      case 'process': return { observation: process.env.HOME, reward: 0, terminated: true }; // @process
      case 'require': return { observation: String(g.eval("require('fs')")), reward: 0, terminated: true }; // @require
      case 'fetch': return { observation: String(fetch('http://127.0.0.1/')), reward: 0, terminated: true }; // @fetch
      case 'timers': return { observation: String(setTimeout(() => 0, 0)), reward: 0, terminated: true }; // @timers
      case 'constructor': return { observation: g.constructor.constructor('return process')().pid, reward: 0, terminated: true }; // @constructor
      case 'globals': {
        const probe = ['process', 'require', 'module', 'fetch', 'setTimeout', 'setInterval', 'setImmediate', 'XMLHttpRequest', 'WebAssembly', 'Deno', 'Bun', 'os', 'std'];
        const found = probe.filter((name) => typeof g[name] !== 'undefined' || typeof Function('return this')()[name] !== 'undefined');
        return { observation: JSON.stringify(found), reward: Math.random(), terminated: true };
      }
      case 'pollute-prototype': (Object.prototype as any).polluted = 'yes'; return { observation: '', reward: 0, terminated: true }; // @pollute-prototype
      case 'pollute-global': g.leaked = 'yes'; return { observation: '', reward: 0, terminated: true }; // @pollute-global
      case 'patch-builtin': (Array.prototype as any).push = () => 0; return { observation: '', reward: 0, terminated: true }; // @patch-builtin
      case 'read-pollution': {
        const seen = [({} as any).polluted, g.leaked, [1].push(2)];
        return { observation: JSON.stringify(seen), reward: 0, terminated: false };
      }
      case 'overrides': {
        class MyError extends Error { constructor() { super('mine'); this.name = 'MyError'; } }
        const o: any = { toString: undefined };
        o.toString = () => 'own toString';
        const list: any = [1];
        list.push = () => 'own push';
        return { observation: [new MyError().name, String(o), list.push()].join(' | '), reward: 0, terminated: false };
      }
      default: return { observation: 'unknown', reward: 0, terminated: false };
    }
  },
});
`;

function lineOf(marker: string): number {
  return PROBE.split('\n').findIndex((l) => l.includes(marker)) + 1;
}

let env: SandboxEnvironment;
let episode = 0;

beforeAll(async () => {
  const loaded = await SandboxEnvironment.load({ files: { 'env.ts': PROBE }, entry: 'env.ts' }, { limits: { callTimeoutMs: 300, memoryBytes: 32 << 20 } });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  env = loaded.env;
});
afterAll(() => env.dispose());

async function act(action: string) {
  const episodeId = `e${episode++}`;
  await env.reset({ episodeId, seed: episode, taskSeed: 0 });
  return env.step({ episodeId, action });
}

/** The observation an action's episode ends with. */
async function observation(action: string): Promise<string> {
  const result = await act(action);
  if (!result.next) throw new Error(`${action} ended its episode without an observation`);
  return result.next.observation;
}

async function failure(action: string): Promise<SandboxError> {
  const error = await act(action).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SandboxError);
  return error as SandboxError;
}

/** The host is healthy and the environment still works: a normal episode right after. */
async function expectHealthy() {
  const result = await act('ok');
  expect(result.rewards.agent).toBe(1);
  expect(result.terminated).toBe(true);
}

describe('sandbox battery', () => {
  test('a normal episode runs', expectHealthy);

  test.each([
    ['throw', 'throw', '@throw', /threw Error: user boom/],
    ['infinite loop', 'loop', '@loop', /longer than 300 ms/],
    ['deep recursion', 'recurse', '@recurse', /recursed too deeply/],
    ['process', 'process', '@process', /ReferenceError: 'process' is not defined/],
    ['require', 'require', '@require', /ReferenceError: 'require' is not defined/],
    ['fetch', 'fetch', '@fetch', /ReferenceError: 'fetch' is not defined/],
    ['timers', 'timers', '@timers', /ReferenceError: 'setTimeout' is not defined/],
    ['globalThis constructors', 'constructor', '@constructor', /ReferenceError: 'process' is not defined/],
  ])('%s: clear error at the user line, host healthy after', async (_name, action, marker, message) => {
    const started = Date.now();
    const e = await failure(action);
    expect(e.message).toMatch(message);
    // A loop is interrupted at its condition (its line) or at its back-edge, which QuickJS puts on
    // the line before; which one depends on how many operations ran before it, the SDK's included.
    const lines = action === 'loop' ? [lineOf(marker) - 1, lineOf(marker)] : [lineOf(marker)];
    expect(e.location?.file).toBe('env.ts');
    expect(lines).toContain(e.location?.line);
    expect(e.during).toBe('step');
    expect(Date.now() - started).toBeLessThan(3000);
    await expectHealthy();
  });

  test('memory bomb is stopped, reported at its line, and the sandbox replaced', async () => {
    const e = await failure('memory');
    expect(['memory', 'timeout']).toContain(e.kind);
    expect(e.location?.file).toBe('env.ts');
    if (e.kind === 'timeout') expect(e.location?.line).toBe(lineOf('@memory'));
    await expectHealthy();
  });

  test('huge output is refused with the environment location', async () => {
    const e = await failure('huge');
    expect(e.kind).toBe('output-too-large');
    expect(e.message).toMatch(/limit is 1000000/);
    expect(e.location?.line).toBe(lineOf('export default'));
    await expectHealthy();
  });

  test.each([
    ['nan', /reward NaN/],
    ['no-reward', /reward undefined; a reward must be a finite number \(return reward: 0 for no reward\)/],
    ['text-reward', /reward "high"/],
  ])('non-numeric reward %s is refused', async (action, message) => {
    const e = await failure(action);
    expect(e.kind).toBe('invalid-output');
    expect(e.message).toMatch(message);
    expect(e.location).toMatchObject({ file: 'env.ts', line: lineOf('export default') });
    await expectHealthy();
  });

  test('no host objects are reachable, and Math.random is seeded per episode', async () => {
    const a = await act('globals');
    const b = await act('globals');
    expect(JSON.parse(a.next?.observation ?? (await lastObservation(a)))).toEqual([]);
    expect(a.rewards.agent).not.toBe(b.rewards.agent);
    // Same seed, same Math.random.
    await env.reset({ episodeId: 'r1', seed: 7, taskSeed: 0 });
    await env.reset({ episodeId: 'r2', seed: 7, taskSeed: 0 });
    const r1 = await env.step({ episodeId: 'r1', action: 'globals' });
    const r2 = await env.step({ episodeId: 'r2', action: 'globals' });
    expect(r1.rewards.agent).toBe(r2.rewards.agent);
  });

  test('an episode stopped by its deadline is closed inside the sandbox too', async () => {
    await env.reset({ episodeId: 'looped', seed: 1, taskSeed: 0 });
    await expect(env.step({ episodeId: 'looped', action: 'loop' })).rejects.toThrow(/longer than/);
    await env.reset({ episodeId: 'count', seed: 1, taskSeed: 0 });
    // The driver's close reports how many episodes remain open: only "count".
    expect((env as unknown as { sandbox: { call: (m: string, a: object) => { value: { open: number } } } }).sandbox.call('close', { episodeId: 'none' }).value.open).toBe(1);
    await env.close('count');
  });

  test('an episode that failed is closed', async () => {
    await env.reset({ episodeId: 'closed', seed: 1, taskSeed: 0 });
    await expect(env.step({ episodeId: 'closed', action: 'throw' })).rejects.toThrow(/user boom/);
    await expect(env.step({ episodeId: 'closed', action: 'ok' })).rejects.toThrow(/no open episode/);
  });
});

// Terminated episodes carry no next observation; the probe puts its answer in info instead when needed.
async function lastObservation(result: { info: Record<string, unknown> }) {
  return JSON.stringify(result.info.found ?? []);
}

describe('episodes are independent: built-ins and globals are frozen', () => {
  test.each([
    ['a built-in prototype', 'pollute-prototype', '@pollute-prototype', /TypeError: object is not extensible \(built-ins and the global object are frozen/],
    ['a global', 'pollute-global', '@pollute-global', /TypeError: object is not extensible \(built-ins/],
    ['a built-in method', 'patch-builtin', '@patch-builtin', /TypeError: Cannot assign to push of a built-in prototype/],
  ])('changing %s throws at the user line, and no later episode sees a change', async (_name, action, marker, message) => {
    const e = await failure(action);
    expect(e.message).toMatch(message);
    expect(e.location).toMatchObject({ file: 'env.ts', line: lineOf(marker) });
    expect(JSON.parse(await observation('read-pollution'))).toEqual([null, null, 2]);
  });

  test('instances may still override what their frozen prototypes define (Error names, toString, push)', async () => {
    expect(await observation('overrides')).toBe('MyError | own toString | own push');
  });

});

describe('compile and load errors', () => {
  test('a top-level infinite loop is stopped and reported at its line, not at 1:1', async () => {
    const code = "import { defineEnvironment } from 'whetstone';\nlet n = 0;\nwhile (n >= 0) { n++; }\nexport default defineEnvironment({ name: 'x', systemPrompt: 's', sample: () => undefined, reset() { return 'a'; }, step() { return { observation: '', reward: 0, terminated: true }; } });\n";
    const error = await SandboxEnvironment.load({ files: { 'env.ts': code }, entry: 'env.ts' }, { limits: { loadTimeoutMs: 300 } }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as SandboxError).message).toMatch(/load ran longer than 300 ms/);
    expect((error as SandboxError).location).toMatchObject({ file: 'env.ts', line: 3 });
  });

  test('a syntax error points at the TypeScript line and column', async () => {
    const r = await compileEnvironment({ entry: 'env.ts', files: { 'env.ts': "import { defineEnvironment } from 'whetstone';\nconst x: number = ;\n" } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]).toMatchObject({ location: { file: 'env.ts', line: 2, column: 19 } });
  });

  test('a static require is refused at compile time', async () => {
    const r = await compileEnvironment({ entry: 'env.ts', files: { 'env.ts': "const fs = require('fs');\nexport default fs;\n" } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]).toMatchObject({ location: { file: 'env.ts', line: 1 } });
  });

  test('imports beyond the environment and the SDK are refused', async () => {
    const r = await compileEnvironment({ entry: 'env.ts', files: { 'env.ts': "import fs from 'node:fs';\nexport default fs;\n" } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0].message).toMatch(/its own files and "whetstone" only/);
  });

  test('a module that throws while loading is reported at its line', async () => {
    const source = "import { defineSingleTurn } from 'whetstone';\n\nconst table = JSON.parse('{oops');\nexport default defineSingleTurn({ name: 'x', systemPrompt: '', sample: () => table, prompt: () => '', reward: () => 0 });\n";
    const e = await SandboxEnvironment.load({ entry: 'env.ts', files: { 'env.ts': source } }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SandboxError);
    expect((e as SandboxError).kind).toBe('load');
    expect((e as SandboxError).location).toMatchObject({ file: 'env.ts', line: 3 });
  });

  test('a module without a default environment is refused clearly', async () => {
    const e = await SandboxEnvironment.load({ entry: 'env.ts', files: { 'env.ts': 'export const x = 1;\n' } }).catch((x: unknown) => x);
    expect((e as SandboxError).message).toMatch(/must `export default` an environment/);
  });

  test('multi-file environments resolve their own imports', async () => {
    const r = await SandboxEnvironment.load({
      entry: 'env.ts',
      files: {
        'env.ts': "import { defineSingleTurn } from 'whetstone';\nimport { answer } from './lib/answer';\nexport default defineSingleTurn({ name: 'two', systemPrompt: '', sample: (rng) => rng.int(0, 5), prompt: (t) => `${t}`, reward: (_p, c, t) => (c === String(answer(t)) ? 1 : 0) });\n",
        'lib/answer.ts': 'export const answer = (t: number) => t * 2;\n',
      },
    });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    const reset = await r.env.reset({ episodeId: 'a', seed: 1, taskSeed: 3 });
    const t = Number(reset.turn.observation);
    const step = await r.env.step({ episodeId: 'a', action: String(t * 2) });
    expect(step.rewards.agent).toBe(1);
    await r.env.dispose();
  });
});
