import { describe, expect, test } from 'vitest';
import { parseJsonlDataset } from './dataset';
import { Rng } from './environment/rng';
import { type ObjectSchema, validateValue } from './environment/schema';
import { describeTools, formatToolResult, parseToolCall } from './environment/tools';
import { defineEnvironment } from './environment/define';
import { manifestTraining, parseManifest } from './manifest';
import { readFileSync } from 'node:fs';
import { generateManifestJsonSchema, MANIFEST_SCHEMA_PATH } from './emit-manifest-schema';
import { ALGORITHMS, optionNames } from './training-config';

describe('Rng', () => {
  test('is deterministic per seed and differs across seeds', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const c = new Rng(43);
    const seqA = Array.from({ length: 8 }, () => a.next());
    expect(Array.from({ length: 8 }, () => b.next())).toEqual(seqA);
    expect(Array.from({ length: 8 }, () => c.next())).not.toEqual(seqA);
  });

  test('int is uniform enough over its range and respects bounds', () => {
    const rng = new Rng(1);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[rng.int(0, 4)]++;
    for (const n of counts) expect(n).toBeGreaterThan(850);
    expect(() => rng.int(3, 3)).toThrow(RangeError);
  });

  test('shuffle keeps the elements', () => {
    expect(new Rng(5).shuffle([1, 2, 3, 4, 5]).sort()).toEqual([1, 2, 3, 4, 5]);
  });
});

const calculator = {
  name: 'calculator',
  description: 'Evaluates arithmetic.',
  parameters: { type: 'object', properties: { expression: { type: 'string' } } } as ObjectSchema,
};
const add = {
  name: 'add',
  description: 'Adds.',
  parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } } as ObjectSchema,
};

describe('tool calls', () => {
  test.each([
    ['JSON form', 'Let me compute. <tool_call>{"name": "calculator", "arguments": {"expression": "123*456"}}</tool_call>', { expression: '123*456' }],
    ['bare value', '<tool_call>calculator(123*456)</tool_call>', { expression: '123*456' }],
    ['quoted value', '<tool_call>calculator("1 + 2")</tool_call>', { expression: '1 + 2' }],
    ['missing close tag', 'ok <tool_call>calculator(7*8)', { expression: '7*8' }],
  ])('%s', (_name, text, args) => {
    expect(parseToolCall(text, [calculator, add])).toMatchObject({ kind: 'call', name: 'calculator', args });
  });

  test('multi-argument tools take a JSON object', () => {
    expect(parseToolCall('<tool_call>add({"a": 2, "b": 3})</tool_call>', [add])).toMatchObject({ kind: 'call', args: { a: 2, b: 3 } });
    expect(parseToolCall('<tool_call>add(2, 3)</tool_call>', [add])).toMatchObject({ kind: 'malformed' });
  });

  test('bad calls are explained', () => {
    expect(parseToolCall('<tool_call>calc(1)</tool_call>', [calculator])).toMatchObject({ kind: 'malformed', problem: expect.stringMatching(/unknown tool "calc"; available: calculator/) });
    expect(parseToolCall('<tool_call>add({"a": "x", "b": 1})</tool_call>', [add])).toMatchObject({ kind: 'malformed', problem: 'arguments.a: expected a finite number, got string' });
    expect(parseToolCall('no call here', [add])).toEqual({ kind: 'none' });
  });

  test('results and descriptions', () => {
    expect(formatToolResult(56088)).toBe('<tool_result>56088</tool_result>');
    expect(formatToolResult({ error: 'division by zero' })).toBe('<tool_result>error: division by zero</tool_result>');
    expect(describeTools([add])).toContain('add{ a: number, b: number }: Adds.');
  });
});

describe('schema', () => {
  test('reports every problem with its path', () => {
    const schema: ObjectSchema = { type: 'object', properties: { q: { type: 'string' }, n: { type: 'number', integer: true }, tags: { type: 'array', items: { type: 'string' } } }, required: ['q', 'n'] };
    expect(validateValue(schema, { q: 'x', n: 2 })).toEqual([]);
    expect(validateValue(schema, { n: 1.5, tags: ['a', 3] }, 'row')).toEqual(['row.q: missing', 'row.n: expected an integer, got 1.5', 'row.tags[1]: expected string, got number']);
  });
});

describe('datasets', () => {
  test('JSONL rows are validated line by line', () => {
    const schema: ObjectSchema = { type: 'object', properties: { question: { type: 'string' }, answer: { type: 'number' } } };
    const text = '{"question":"1+1","answer":2}\n\n{"question":"2+2"}\nnot json\n{"question":"3+3","answer":6}\n';
    const { rows, problems } = parseJsonlDataset(text, schema);
    expect(rows).toHaveLength(2);
    expect(problems.map((p) => p.line)).toEqual([3, 4]);
    expect(problems[0].message).toBe('row.answer: missing');
  });

  test('names the first bad lines and counts them all', () => {
    const schema: ObjectSchema = { type: 'object', properties: {} };
    const text = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? '{}' : 'nope')).join('\n');
    const { rows, problems, problemCount } = parseJsonlDataset(text, schema, 5);
    expect(rows).toHaveLength(10);
    expect(problems.map((p) => p.line)).toEqual([2, 3, 5, 6, 8]);
    expect(problemCount).toBe(20);
  });
});

describe('manifest', () => {
  test('a minimal manifest gets documented defaults', () => {
    const r = parseManifest({ name: 'bandit', version: '1.0.0', kind: 'single-turn' });
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.manifest.agents).toEqual(['agent']);
      expect(r.manifest.limits).toEqual({ maxTurns: 1, maxTokensPerTurn: 64, maxResponseTokens: 256 });
      expect(manifestTraining(r.manifest)).toMatchObject({ algorithm: 'grpo', groupSize: 8, clipLow: 0.2, clipHigh: 0.28 });
    }
  });

  test('inconsistent manifests are refused with paths', () => {
    const r = parseManifest({
      name: 'Bad Name',
      version: '1',
      kind: 'single-turn',
      agents: ['a', 'b'],
      limits: { maxTurns: 3, maxTokensPerTurn: 500, maxResponseTokens: 100 },
      training: { learners: ['c'] },
    });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.problems).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^name:/),
          expect.stringMatching(/^version:/),
          'agents: a single-turn environment has exactly one agent',
          'limits.maxTurns: a single-turn environment has maxTurns 1',
          'limits.maxTokensPerTurn: cannot exceed maxResponseTokens',
          'training.learners.0: unknown agent "c"',
        ]),
      );
    }
  });
});

describe('define', () => {
  test('single-agent environments are normalised to one agent', () => {
    const env = defineEnvironment<number, number>({
      name: 'count',
      systemPrompt: 'count',
      sample: (rng) => rng.int(1, 3),
      reset: (ctx) => {
        ctx.state = 0;
        return 'start';
      },
      step: (_a, ctx) => ({ observation: `${++ctx.state}`, reward: 1, terminated: ctx.state >= ctx.task }),
    });
    const ctx = { seed: 1, rng: new Rng(1), task: 2, row: undefined, state: undefined as unknown };
    expect(env.reset(ctx)).toEqual({ agent: 'agent', observation: 'start' });
    expect(env.step('x', ctx)).toMatchObject({ rewards: { agent: 1 }, terminated: false, next: { agent: 'agent', observation: '1' } });
    expect(env.step('x', ctx)).toMatchObject({ terminated: true, next: undefined });
    expect(() => defineEnvironment({ name: 'x', systemPrompt: '', reset: () => '', step: () => ({ observation: '', reward: 0, terminated: true }) } as never)).toThrow(/sample\(rng\) or rowSchema/);
  });
});

describe('manifest.schema.json', () => {
  test('the committed file matches the generator (run npx tsx sdk/emit-manifest-schema.ts)', () => {
    expect(readFileSync(MANIFEST_SCHEMA_PATH, 'utf8')).toBe(generateManifestJsonSchema());
  });

  test('it offers every training option of every algorithm, documented, and nothing else', () => {
    const schema = JSON.parse(generateManifestJsonSchema()) as { properties: { training: { properties: Record<string, { description?: string }>; additionalProperties: boolean } } };
    const training = schema.properties.training;
    const names = new Set(ALGORITHMS.flatMap((a) => optionNames(a).filter((n) => !n.startsWith('model.'))));
    expect(new Set(Object.keys(training.properties))).toEqual(new Set(['algorithm', 'model', ...names]));
    expect(training.additionalProperties).toBe(false);
    expect(training.properties.clipHigh.description).toMatch(/Default: grpo 0.28, ppo 0.2/);
  });
});
