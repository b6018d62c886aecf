/**
 * The source (env.ts) of a probe environment for tests of saving and dry runs: its state counts the
 * steps of an episode (`ctx.state.n`, counted before `step` runs), and `step` is the rest of the
 * step's body over `action` and `ctx`: it returns the step's result (or loops, or throws).
 */
export function probeEnvironmentSource(name: string, step: string): string {
  return `import { defineEnvironment } from 'whetstone';
export default defineEnvironment<undefined, { n: number }>({
  name: '${name}',
  systemPrompt: 'probe',
  sample: () => undefined,
  reset(ctx) { ctx.state = { n: 0 }; return 'go'; },
  step(action, ctx) {
    ctx.state.n++;
    ${step}
  },
  bots: { any: () => 'x' },
});
`;
}
