/**
 * The sampling part of `bench:engine` alone, for A/B runs of two checkouts in alternation:
 * cached ms (median of `runs`) and the recompute baseline's ms (one run, as the benchmark; `cached`
 * skips it, `recompute` times only it, median of `runs`).
 * `npx tsx gpu-worker/engine/tools/bench-sample.ts [runs] [cached|recompute]`
 */
import { initBackend } from '../backend';
import { GPT } from '../model';
import { sample } from '../sampler';
import { CharTokenizer } from '../tokenizer';

await initBackend();
const tok = new CharTokenizer();
const model = new GPT({ vocabSize: tok.vocabSize, layers: 2, width: 64, heads: 4, contextLength: 96 });
const prompts = Array.from({ length: 64 }, (_, i) => [tok.bos, ...tok.encode(`${i}+${(i * 7) % 50}=`)]);
const opts = { maxTokens: 64, temperature: 1, stopAtEos: false, seed: 1 };
const time = (useCache: boolean, runs: number, warmup: number) => {
  for (let i = 0; i < warmup; i++) sample(model, tok, prompts, { ...opts, useCache });
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    sample(model, tok, prompts, { ...opts, useCache });
    ms.push(performance.now() - t0);
  }
  return ms.sort((a, b) => a - b)[Math.floor(runs / 2)];
};
const runs = Number(process.argv[2] ?? 3);
const mode = process.argv[3];
const cached = mode === 'recompute' ? NaN : time(true, runs, 1);
const recompute = mode === 'cached' ? NaN : time(false, mode === 'recompute' ? runs : 1, 0);
console.log(JSON.stringify({ cachedMs: Number(cached.toFixed(1)), recomputeMs: Number(recompute.toFixed(1)), ratio: Number((recompute / cached).toFixed(2)) }));
