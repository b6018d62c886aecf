/**
 * Environment benchmarks (`npm run bench:envs`): one JSON object per figure.
 *
 * - sandbox_steps_per_s_{gomoku,math}: environment steps through the QuickJS sandbox.
 * - direct_steps_per_s_{gomoku,math}: the same bundled environment code called directly in Node.
 *   The same actions are replayed in both. For math (single-turn) a "step" is reset + step.
 * - rollout_episodes_per_s_gomoku: batched rollouts with the small tfjs GPT generating every move
 *   (real sampling cost), against the random bot.
 * - sandbox_share_of_rollout: the fraction of that rollout's wall time spent in sandbox calls.
 */
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { initBackend } from '../gpu-worker/engine/backend';
import { GPT } from '../gpu-worker/engine/model';
import { sample } from '../gpu-worker/engine/sampler';
import { CharTokenizer } from '../gpu-worker/engine/tokenizer';
import { type GenerateOptions, type Policy, type SampleResult } from '../gpu-worker/runtime/policy';
import { type EpisodeSpec, runRollouts } from '../gpu-worker/runtime/rollout';
import { SandboxEnvironment } from '../gpu-worker/runtime/sandbox/sandbox-environment';
import { type EnvironmentDefinition, type EpisodeContext } from '../sdk/environment/define';
import { Rng } from '../sdk/environment/rng';
import { type Json } from '../sdk/environment/schema';
import { loadTemplate, templateRows, type TemplateName } from '../env-templates/load-template';
import { emit } from './engine-measure';

const SDK = fileURLToPath(new URL('../sdk/environment/index.ts', import.meta.url));

/** The template's environment definition, bundled by esbuild and imported into this process. */
async function directDefinition(name: TemplateName): Promise<EnvironmentDefinition> {
  const template = loadTemplate(name);
  const result = await build({
    entryPoints: [fileURLToPath(new URL(`../env-templates/${name}/${template.manifest.entry}`, import.meta.url))],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    alias: { whetstone: SDK },
    logLevel: 'silent',
  });
  const url = `data:text/javascript;base64,${Buffer.from(result.outputFiles[0].text).toString('base64')}`;
  return ((await import(url)) as { default: EnvironmentDefinition }).default;
}

async function sandboxed(name: TemplateName): Promise<SandboxEnvironment> {
  const loaded = await SandboxEnvironment.load(loadTemplate(name).source);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.env;
}

function directContext(def: EnvironmentDefinition, seed: number, row?: Json): EpisodeContext {
  const rng = new Rng(seed);
  const task = row ?? def.sample!(new Rng(seed + 1));
  return { seed, rng, task, row, state: undefined };
}

/** Games of random legal moves, played directly, as action lists to replay. */
function gomokuGames(def: EnvironmentDefinition, games: number): string[][] {
  const out: string[][] = [];
  for (let g = 0; g < games; g++) {
    const ctx = directContext(def, g);
    def.reset(ctx);
    const rng = new Rng(1000 + g);
    const actions: string[] = [];
    for (;;) {
      const cells = (ctx.state as { board: { cells: number[]; size: number } }).board;
      const empty = cells.cells.flatMap((c, i) => (c === 0 ? [i] : []));
      const cell = rng.pick(empty);
      const action = `<move>${Math.floor(cell / cells.size) + 1},${(cell % cells.size) + 1}</move>`;
      actions.push(action);
      if (!def.step(action, ctx).next) break;
    }
    out.push(actions);
  }
  return out;
}

async function benchGomoku() {
  const def = await directDefinition('gomoku');
  const env = await sandboxed('gomoku');
  const games = gomokuGames(def, 200);
  const steps = games.reduce((n, g) => n + g.length, 0);

  let sandboxMs = 0;
  for (const [g, actions] of games.entries()) {
    const id = `g${g}`;
    await env.reset({ episodeId: id, seed: g, taskSeed: g + 1 });
    for (const action of actions) {
      const t0 = performance.now();
      env.stepSync({ episodeId: id, action });
      sandboxMs += performance.now() - t0;
    }
  }
  let directMs = 0;
  for (const [g, actions] of games.entries()) {
    const ctx = directContext(def, g);
    def.reset(ctx);
    for (const action of actions) {
      const t0 = performance.now();
      def.step(action, ctx);
      directMs += performance.now() - t0;
    }
  }
  emit('sandbox_steps_per_s_gomoku', steps / (sandboxMs / 1000), 'steps/s', { steps, usPerStep: Number(((sandboxMs * 1000) / steps).toFixed(1)) });
  emit('direct_steps_per_s_gomoku', steps / (directMs / 1000), 'steps/s', { steps, usPerStep: Number(((directMs * 1000) / steps).toFixed(2)) });
  await env.dispose();
}

async function benchMath() {
  const def = await directDefinition('math');
  const env = await sandboxed('math');
  const rows = templateRows(loadTemplate('math'), 'train', env.description.rowSchema!);
  const episodes = 2000;
  const answer = (i: number) => String(Number(rows[i % rows.length].answer) + (i % 2));

  let t0 = performance.now();
  for (let i = 0; i < episodes; i++) {
    await env.reset({ episodeId: `m${i}`, seed: i, taskSeed: i, row: rows[i % rows.length] });
    env.stepSync({ episodeId: `m${i}`, action: answer(i) });
  }
  const sandboxMs = performance.now() - t0;
  t0 = performance.now();
  for (let i = 0; i < episodes; i++) {
    const ctx = directContext(def, i, rows[i % rows.length]);
    def.reset(ctx);
    def.step(answer(i), ctx);
  }
  const directMs = performance.now() - t0;
  emit('sandbox_steps_per_s_math', episodes / (sandboxMs / 1000), 'steps/s', { episodes, step: 'reset+step' });
  emit('direct_steps_per_s_math', episodes / (directMs / 1000), 'steps/s', { episodes, step: 'reset+step' });
  await env.dispose();
}

async function benchRollout() {
  const backend = await initBackend();
  const tok = new CharTokenizer();
  const model = new GPT({ vocabSize: tok.vocabSize, contextLength: 640, layers: 2, width: 64, heads: 4, seed: 0 });
  // The untrained GPT does all the sampling; its text is then replaced by a legal move so that
  // games run their natural length (an untrained policy would forfeit on its first move).
  const policy: Policy = {
    async generate(prompts: number[][], options: GenerateOptions): Promise<SampleResult[]> {
      const sampled = sample(model, tok, prompts, { maxTokens: options.maxTokens, temperature: options.temperature, stop: options.stop, seed: options.seed });
      return prompts.map((prompt, i) => {
        const board = tok.decode(prompt).split('\n').slice(1, 10).flatMap((l) => l.trim().split(/\s+/).slice(1));
        const empty = board.flatMap((c, k) => (c === '.' ? [k] : []));
        const cell = new Rng(options.seed * 97 + i).pick(empty);
        const text = `<move>${Math.floor(cell / 9) + 1},${(cell % 9) + 1}</move>`;
        const tokens = [...tok.encode(text), tok.eos];
        return { tokens, text, logprobs: tokens.map((_, k) => sampled[i].logprobs[k] ?? 0), finishReason: 'eos' };
      });
    },
  };
  const env = await sandboxed('gomoku');
  const manifest = loadTemplate('gomoku').manifest;
  const specs: EpisodeSpec[] = Array.from({ length: 16 }, (_, i) => ({
    episodeId: `r${i}`,
    group: `g${i >> 2}`,
    seed: i,
    taskSeed: i >> 2,
    players: { black: { kind: 'policy', policy: 'gpt', learn: true }, white: { kind: 'bot', bot: 'random' } },
  }));
  const t0 = performance.now();
  const rollouts = await runRollouts(env, tok, { gpt: policy }, specs, {
    ...manifest.limits,
    temperature: 1,
    contextLength: 640,
    seed: 0,
  });
  const wall = performance.now() - t0;
  const sandboxMs = env.stats.ms;
  if (rollouts.some((r) => r.endReason === 'error')) throw new Error(`rollout errors: ${JSON.stringify(rollouts.find((r) => r.error)?.error)}`);
  const moves = rollouts.reduce((n, r) => n + r.moves.length, 0);
  emit('rollout_episodes_per_s_gomoku', rollouts.length / (wall / 1000), 'episodes/s', {
    backend: backend.backend,
    episodes: rollouts.length,
    moves,
    wallMs: Math.round(wall),
    policy: `2-layer d=64 GPT, up to ${manifest.limits.maxTokensPerTurn} tokens sampled per move`,
  });
  emit('sandbox_share_of_rollout', sandboxMs / wall, 'ratio', { sandboxMs: Math.round(sandboxMs), sandboxCalls: env.stats.calls, wallMs: Math.round(wall) });
  await env.dispose();
  model.dispose();
}

await benchGomoku();
await benchMath();
await benchRollout();
