/**
 * `npm run bench:engine`: throughput of the engine on this machine's backend, one JSON object per
 * line. Every figure comes from this one run.
 */
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../gpu-worker/engine/backend';
import { GPT } from '../gpu-worker/engine/model';
import { Rng } from '../gpu-worker/engine/rng';
import { sampleAsync } from '../gpu-worker/engine/sampler';
import { SFTTrainer } from '../gpu-worker/engine/sft';
import { CharTokenizer } from '../gpu-worker/engine/tokenizer';
import { randomBatch } from '../gpu-worker/engine/tools/step-input';
import { bestMatmulGflops, emit, timeMs, trainFlopsPerToken } from './engine-measure';
import { NaiveGPT } from './naive-gpt';
import { pretrainedFigures } from './engine-pretrained';

const report = await initBackend();
const tok = new CharTokenizer();
const rng = new Rng(0);
// Every line names the backend (and on WebGPU the adapter: lavapipe's figures only prove the path runs).
const backend = { backend: report.backend, simd: report.simd, ...(report.adapter && { adapter: report.devices[0].name }) };

const roof = await bestMatmulGflops();
emit('matmul_gflops', roof.gflops, 'GFLOP/s', { ...backend, shape: roof.shape });

async function trainThroughput(name: string, cfg: { layers: number; width: number; heads: number; contextLength: number }, batch: number, steps: number) {
  const model = new GPT({ vocabSize: tok.vocabSize, ...cfg });
  const trainer = new SFTTrainer(model, { warmupSteps: 0 });
  const data = randomBatch(tok, rng, batch, cfg.contextLength);
  const ms = await timeMs(() => trainer.stepAsync(data), steps);
  // Positions trained per step: the model reads ctx − 1 inputs per row and predicts each next token.
  const tokens = batch * (cfg.contextLength - 1);
  const tps = tokens / (ms / 1000);
  const flopsPerToken = trainFlopsPerToken({ ...model.config });
  const mfu = (tps * flopsPerToken) / (roof.gflops * 1e9);
  emit(`train_tokens_per_s_${name}`, tps, 'tokens/s', { ...backend, ...cfg, batch, stepMs: Number(ms.toFixed(1)), parameters: model.numParameters });
  emit(`mfu_${name}`, mfu, 'ratio', { ...backend, modelGflopsPerS: Number(((tps * flopsPerToken) / 1e9).toFixed(2)), flopsPerToken });
  trainer.dispose();
  model.dispose();
  return tps;
}

const small = { layers: 2, width: 64, heads: 4, contextLength: 32 };
const tpsSmall = await trainThroughput('small', small, 64, 8);
await trainThroughput('large', { layers: 4, width: 128, heads: 4, contextLength: 64 }, 32, 5);

// The naive baseline: same model and batch, plain tfjs autodiff.
{
  const naive = new NaiveGPT({ vocabSize: tok.vocabSize, ...small });
  const data = randomBatch(tok, rng, 64, small.contextLength);
  const inputs = tf.tensor2d(data.map((s) => s.tokens.slice(0, -1)), undefined, 'int32');
  const targets = tf.tensor2d(data.map((s) => s.tokens.slice(1)), undefined, 'int32');
  const ms = await timeMs(() => naive.trainStep(inputs, targets), 5, 1);
  const tps = (64 * (small.contextLength - 1)) / (ms / 1000);
  emit('naive_train_tokens_per_s_small', tps, 'tokens/s', { ...backend, stepMs: Number(ms.toFixed(1)) });
  emit('speedup_vs_naive_small', tpsSmall / tps, 'ratio', backend);
  inputs.dispose();
  targets.dispose();
}

// Sampling: the small model with room for 64 new tokens, 64 prompts.
{
  const model = new GPT({ vocabSize: tok.vocabSize, ...small, contextLength: 96 });
  const prompts = Array.from({ length: 64 }, (_, i) => [tok.bos, ...tok.encode(`${i}+${(i * 7) % 50}=`)]);
  const opts = { maxTokens: 64, temperature: 1, stopAtEos: false, seed: 1 };
  const run = (useCache: boolean) => () => sampleAsync(model, tok, prompts, { ...opts, useCache });
  const cached = await timeMs(run(true), 3, 1);
  const recompute = await timeMs(run(false), 1, 0);
  const newTokens = 64 * 64;
  emit('sample_tokens_per_s', newTokens / (cached / 1000), 'tokens/s', { ...backend, prompts: 64, newTokens: 64, ms: Number(cached.toFixed(0)) });
  emit('sample_speedup_vs_recompute', recompute / cached, 'ratio', { ...backend, recomputeTokensPerS: Number((newTokens / (recompute / 1000)).toFixed(1)) });
  model.dispose();
}

// A pretrained model's size (SmolLM2-135M's shapes, random weights): KV-cached sampling and a LoRA step.
await pretrainedFigures(roof.gflops, backend);
