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
      case 'proto-info': return { observation: '', reward: 0, terminated: true, info: JSON.parse('{"__proto__": {"polluted": "yes"}, "constructor": 1, "a": 2}') };
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
    // Stopped at its deadline rather than left to run (a bound no loaded machine reaches; not a speed figure).
    expect(Date.now() - started).toBeLessThan(20_000);
    await expectHealthy();
  });

  test('memory bomb is stopped, reported at its line, and the sandbox replaced', async () => {
    const e = await failure('memory');
    expect(['memory', 'timeout']).toContain(e.kind);
    expect(e.location?.file).toBe('env.ts');
    // Stopped by its deadline (a loaded machine fills the heap slower): at its loop, which QuickJS
    // may attribute to the line before when the interrupt lands on the loop's back-edge (sandbox.ts).
    if (e.kind === 'timeout') expect([lineOf('@memory') - 1, lineOf('@memory')]).toContain(e.location?.line);
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
  ])('non-numeric reward %s is refused at the step function that returned it (it has many returns)', async (action, message) => {
    const e = await failure(action);
    expect(e.kind).toBe('invalid-output');
    expect(e.message).toMatch(message);
    expect(e.location).toEqual({ file: 'env.ts', line: lineOf('step(action, ctx) {'), column: 3 });
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

  test("an info key named __proto__ comes out as data: an own key, no prototype set, nothing polluted", async () => {
    const { info } = await act('proto-info');
    expect(Object.keys(info).sort()).toEqual(['__proto__', 'a', 'constructor']);
    expect(Object.getOwnPropertyDescriptor(info, '__proto__')?.value).toEqual({ polluted: 'yes' });
    expect(Object.getPrototypeOf(info)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.parse(await observation('read-pollution'))).toEqual([null, null, 2]);
  });

  test('instances may still override what their frozen prototypes define (Error names, toString, push)', async () => {
    expect(await observation('overrides')).toBe('MyError | own toString | own push');
  });

});

describe('a value the runtime cannot use is reported where the user returned it', () => {
  // Functions with one return statement each (marked), whose values are bad on command. With several
  // returns, the function's own line is reported (the probe's step above); so it is for a function
  // that returned nothing (`@fn`), since its return may not have run.
  const RETURNS = `import { defineEnvironment } from 'whetstone';

const grade = (action: string) => action.length;

export default defineEnvironment<undefined, { turn: number }>({
  name: 'returns',
  systemPrompt: 'p',
  sample: () => undefined,
  reset(ctx) {
    ctx.state = { turn: 0 };
    return (ctx.seed === 99 ? 42 : 'go') as string; // @reset
  },
  step(action, ctx) { // @fn
    ctx.state.turn++;
    const payoff = action === 'text' ? 'high' : grade(action);
    const result = { observation: 'next', reward: payoff as number, terminated: false };
    return (action === 'forgot' ? undefined : result) as never; // @step
  },
});
`;
  const SINGLE = `import { defineSingleTurn } from 'whetstone';

export default defineSingleTurn({
  name: 'single',
  systemPrompt: 's',
  sample: (rng) => rng.int(0, 9),
  prompt: (task) => \`\${task}?\`,
  reward: (_prompt, completion) => (completion === 'x' ? 'high' : 1) as number, // @reward
});
`;
  const where = (source: string, marker: string, token: string) => {
    const lines = source.split('\n');
    const index = lines.findIndex((l) => l.includes(marker));
    return { file: 'env.ts', line: index + 1, column: lines[index].indexOf(token) + 1 };
  };
  async function failing(source: string, seed: number, action: string | null): Promise<SandboxError> {
    const loaded = await SandboxEnvironment.load({ files: { 'env.ts': source }, entry: 'env.ts' });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    try {
      await loaded.env.reset({ episodeId: 'e', seed, taskSeed: 0 });
      if (action !== null) await loaded.env.step({ episodeId: 'e', action });
      throw new Error('expected a failure');
    } catch (e) {
      expect(e).toBeInstanceOf(SandboxError);
      return e as SandboxError;
    } finally {
      await loaded.env.dispose();
    }
  }

  test("step's bad reward: at its return statement, file, line and column", async () => {
    const e = await failing(RETURNS, 1, 'text');
    expect(e.message).toMatch(/step returned reward "high"; a reward must be a finite number \(env\.ts:\d+:\d+\)/);
    expect(e.location).toEqual(where(RETURNS, '@step', 'return'));
  });

  test("reset's observation that is not a string: at its return statement", async () => {
    const e = await failing(RETURNS, 99, null);
    expect(e.message).toMatch(/reset's observation is 42; expected a string/);
    expect(e.location).toEqual(where(RETURNS, '@reset', 'return'));
  });

  test('a step that returns nothing: at the step function (which return ran is unknown)', async () => {
    const e = await failing(RETURNS, 1, 'forgot');
    expect(e.message).toMatch(/step returned undefined; expected an object/);
    expect(e.location).toEqual(where(RETURNS, '@fn', 'step'));
  });

  test("a turn's legal actions must be a non-empty list of non-empty strings; good ones cross the boundary", async () => {
    const source = `import { defineMultiAgentEnvironment } from 'whetstone';

export default defineMultiAgentEnvironment<undefined, null, 'a'>({
  name: 'actions',
  agents: ['a'],
  systemPrompt: 's',
  sample: () => undefined,
  reset: (ctx) => ({ agent: 'a', observation: 'o', actions: (ctx.seed === 1 ? [] : ['x', 'y']) as string[] }),
  step: () => ({ rewards: { a: 1 }, terminated: true }),
});
`;
    const e = await failing(source, 1, null);
    expect(e.message).toMatch(/reset's actions are an empty array; expected a non-empty array of non-empty strings/);
    const loaded = await SandboxEnvironment.load({ files: { 'env.ts': source }, entry: 'env.ts' });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    expect((await loaded.env.reset({ episodeId: 'e', seed: 2, taskSeed: 0 })).turn).toEqual({ agent: 'a', observation: 'o', actions: ['x', 'y'] });
    await loaded.env.dispose();
  });

  test("a single-turn reward function's bad value: at the reward function", async () => {
    const e = await failing(SINGLE, 1, 'x');
    expect(e.message).toMatch(/reward "high"/);
    expect(e.location).toEqual(where(SINGLE, '@reward', '('));
  });
});

describe('a sleeper: an environment that behaves through its dry run and misbehaves after', () => {
  // Module state survives the lockdown (only what the global object reaches is frozen), so a step
  // can count its calls and turn hostile past the dry run's 8 episodes.
  const SLEEPER = `import { defineEnvironment } from 'whetstone';

let calls = 0;

export default defineEnvironment({
  name: 'sleeper',
  systemPrompt: 'p',
  sample: () => undefined,
  reset: () => 'go',
  step() {
    calls++;
    if (calls > 8) while (calls > 0) calls++; // @wakes
    return { observation: '', reward: 1, terminated: true };
  },
});
`;

  test('past its first calls every step is stopped at its deadline, at its line, and the sandbox stays usable', async () => {
    const loaded = await SandboxEnvironment.load({ files: { 'env.ts': SLEEPER }, entry: 'env.ts' }, { limits: { callTimeoutMs: 200 } });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    const env = loaded.env;
    try {
      const step = async (n: number) => {
        await env.reset({ episodeId: `s${n}`, seed: n, taskSeed: 0 });
        return env.step({ episodeId: `s${n}`, action: 'a' });
      };
      for (let n = 0; n < 8; n++) expect((await step(n)).rewards.agent).toBe(1);
      const line = SLEEPER.split('\n').findIndex((l) => l.includes('@wakes')) + 1;
      for (let n = 8; n < 11; n++) {
        const e = await step(n).then(() => null, (x: unknown) => x);
        expect(e).toBeInstanceOf(SandboxError);
        expect((e as SandboxError).message).toMatch(/step ran longer than 200 ms and was stopped/);
        expect((e as SandboxError).location).toMatchObject({ file: 'env.ts', line });
      }
    } finally {
      await env.dispose();
    }
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

  test('symmetries: what the definition returns, checked; one that returns different counts per turn is refused', async () => {
    const source =
      "import { defineSingleTurn } from 'whetstone';\n" +
      "export default defineSingleTurn({ name: 'mirror', systemPrompt: '', sample: () => 0, prompt: () => 'ab', reward: () => 0,\n" +
      "  symmetries: ({ observation, action }) => action === 'odd' ? [{ observation, action }] : [{ observation, action }, { observation: [...observation].reverse().join(''), action: [...action].reverse().join('') }] });\n";
    const r = await SandboxEnvironment.load({ entry: 'env.ts', files: { 'env.ts': source } });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    try {
      expect(r.env.description.symmetries).toBe(true);
      expect(await r.env.symmetries({ turns: [{ agent: 'agent', observation: 'ab', action: 'xy' }] })).toEqual([[{ observation: 'ab', action: 'xy' }, { observation: 'ba', action: 'yx' }]]);
      const e = await r.env.symmetries({ turns: [{ agent: 'agent', observation: 'ab', action: 'xy' }, { agent: 'agent', observation: 'ab', action: 'odd' }] }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(SandboxError);
      expect((e as SandboxError).message).toMatch(/symmetries returned 1 turns for one turn and 2 for another/);
    } finally {
      await r.env.dispose();
    }
    const plain = await SandboxEnvironment.load({ entry: 'env.ts', files: { 'env.ts': "import { defineSingleTurn } from 'whetstone';\nexport default defineSingleTurn({ name: 'p', systemPrompt: '', sample: () => 0, prompt: () => '', reward: () => 0 });\n" } });
    if (!plain.ok) throw new Error(JSON.stringify(plain.errors));
    try {
      expect(plain.env.description.symmetries).toBeUndefined();
      await expect(plain.env.symmetries({ turns: [] })).rejects.toThrow(/this environment defines no symmetries/);
    } finally {
      await plain.env.dispose();
    }
  });
});
