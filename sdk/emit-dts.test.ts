import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import { DTS_PATH, generateEnvironmentDts } from './emit-dts';

/** Type-checks one user file against the emitted .d.ts alone, as the editor will. */
function typeCheck(userCode: string): string[] {
  const files: Record<string, string> = { '/env.ts': userCode, '/whetstone.d.ts': readFileSync(DTS_PATH, 'utf8') };
  const options: ts.CompilerOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, lib: ['lib.es2022.d.ts'], types: [], skipLibCheck: true };
  const host = ts.createCompilerHost(options);
  const original = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version) => (name in files ? ts.createSourceFile(name, files[name], version) : original(name, version));
  host.fileExists = (name) => name in files || ts.sys.fileExists(name);
  host.readFile = (name) => files[name] ?? ts.sys.readFile(name);
  const program = ts.createProgram(Object.keys(files), options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('environment-api.d.ts', () => {
  test('the committed file matches the generator (run npx tsx sdk/emit-dts.ts)', () => {
    expect(readFileSync(DTS_PATH, 'utf8')).toBe(generateEnvironmentDts());
  });

  test('a user environment type-checks against it', () => {
    const problems = typeCheck(`
      import { defineEnvironment, defineSingleTurn, defineMultiAgentEnvironment, parseToolCall, type EpisodeContext } from 'whetstone';
      export const single = defineSingleTurn<{ a: number; b: number }>({
        name: 'add', systemPrompt: 'Add.', rowSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
        prompt: (row) => row.a + ' + ' + row.b, reward: (_p, completion, row) => ({ reward: Number(completion) === row.a + row.b ? 1 : 0 }),
      });
      export const multi = defineEnvironment<number, { left: number }>({
        name: 'count', systemPrompt: (n) => 'Count to ' + n, sample: (rng) => rng.int(1, 5),
        reset: (ctx: EpisodeContext<number, { left: number }>) => { ctx.state = { left: ctx.task }; return 'go'; },
        step: (_a, ctx) => ({ observation: String(--ctx.state.left), reward: 0, terminated: ctx.state.left === 0 }),
        tools: [{ name: 'echo', description: 'echo', parameters: { type: 'object', properties: { text: { type: 'string' } } }, run: (args) => args.text }],
      });
      export const game = defineMultiAgentEnvironment<undefined, undefined, 'x' | 'o'>({
        name: 'g', agents: ['x', 'o'], systemPrompt: (agent) => 'You are ' + agent, sample: () => undefined,
        reset: () => ({ agent: 'x', observation: '' }),
        step: () => ({ rewards: { x: 1, o: -1 }, terminated: true }),
      });
      export const parsed = parseToolCall('<tool_call>echo(hi)</tool_call>', []).kind;
    `);
    expect(problems).toEqual([]);
  });

  test('mistakes are type errors', () => {
    const problems = typeCheck(`
      import { defineEnvironment } from 'whetstone';
      export default defineEnvironment({ name: 'x', systemPrompt: 's', sample: () => 1, reset: () => 'go', step: () => ({ observation: '', reward: 'high', terminated: true }) });
    `);
    expect(problems.join('\n')).toMatch(/string.*not assignable to type 'number'/);
  });
});
