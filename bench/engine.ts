/**
 * `npm run bench:engine`: throughput of the engine on this machine's backend, one JSON object per
 * line. Every figure comes from this one run.
 */
import * as tf from '@tensorflow/tfjs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { initBackend } from '../gpu-worker/engine/backend';
import { GPT } from '../gpu-worker/engine/model';
import { Rng } from '../gpu-worker/engine/rng';
import { sampleAsync } from '../gpu-worker/engine/sampler';
import { SFTTrainer } from '../gpu-worker/engine/sft';
import { CharTokenizer } from '../gpu-worker/engine/tokenizer';
import { randomBatch } from '../gpu-worker/engine/tools/step-input';
import { MATMUL_SHAPES, bestMatmulGflops, emit, timeMs, trainFlopsPerToken } from './engine-measure';
import { NaiveGPT } from './naive-gpt';
import { pretrainedFigures } from './engine-pretrained';

const report = await initBackend();
const tok = new CharTokenizer();
const rng = new Rng(0);
// Every line names the backend (and on WebGPU the adapter: lavapipe's figures only prove the path runs).
const backend = {
  backend: report.backend,
  simd: report.simd,
  threads: report.threads,
  ...(report.kernels && { kernels: report.kernels.split(' (')[0] }),
  ...(report.adapter && { adapter: report.devices[0].name }),
};
const small = { layers: 2, width: 64, heads: 4, contextLength: 32 };
const large = { layers: 4, width: 128, heads: 4, contextLength: 64 };
const sampling = { ...small, contextLength: 96, prompts: 64, newTokens: 64 };

/**
 * The same model trained and sampled in PyTorch eager (bench/torch_reference.py), when python3 has
 * torch: what a researcher would use instead. Run before and after our figures, never beside them
 * (the machine's cores are shared). Null without torch.
 */
function torchFigures(): Map<string, number> | null {
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'torch_reference.py');
  const spec = {
    vocab: tok.vocabSize,
    threads: os.availableParallelism(),
    matmulShapes: MATMUL_SHAPES,
    small: { ...small, batch: 64 },
    large: { ...large, batch: 32 },
    // Prompts as long as ours on average ("<bos>12+34=" is 7 tokens).
    sample: { ...sampling, promptLength: 7 },
  };
  const run = spawnSync('python3', [script, JSON.stringify(spec)], { encoding: 'utf8' });
  if (run.status !== 0) {
    process.stderr.write(`PyTorch comparison skipped: ${/No module named 'torch'/.test(run.stderr ?? '') ? 'python3 has no torch (pip install torch)' : (run.stderr || run.error?.message || '').trim().split('\n').at(-1)}\n`);
    return null;
  }
  const figures = new Map<string, number>();
  for (const line of run.stdout.trim().split('\n')) {
    process.stdout.write(`${line}\n`);
    const { name, value } = JSON.parse(line) as { name: string; value: number };
    figures.set(name, value);
  }
  return figures;
}
const onCpu = report.backend === 'wasm' || report.backend === 'cpu' || report.backend === 'tensorflow';
// BENCH_ONLY=pretrained: the roof, then only the pretrained lines (a minute instead of several;
// PyTorch is skipped, so the roof is ours alone).
const only = process.env.BENCH_ONLY;
if (only !== undefined && only !== 'pretrained') throw new Error(`BENCH_ONLY=${only}: only "pretrained" is known`);
const torchBefore = onCpu && !only ? torchFigures() : null;

const roof = await bestMatmulGflops();
emit('matmul_gflops', roof.gflops, 'GFLOP/s', { ...backend, shape: roof.shape });
const gemm1024 = await bestMatmulGflops([[1024, 1024, 1024]]);
emit('gemm_1024_gflops', gemm1024.gflops, 'GFLOP/s', backend);
// MFU against the best GEMM measured on this machine (ours or PyTorch's at 1024³), not our own rate.
const torchGemm = torchBefore?.get('torch_gemm_1024_gflops') ?? 0;
const machineGemm = Math.max(gemm1024.gflops, roof.gflops, torchGemm);
emit('machine_gemm_gflops', machineGemm, 'GFLOP/s', { ...backend, from: machineGemm === torchGemm ? 'torch' : 'whetstone' });
if (only === 'pretrained') {
  await pretrainedFigures(machineGemm, backend);
  process.exit(0);
}

async function trainThroughput(name: string, cfg: { layers: number; width: number; heads: number; contextLength: number }, batch: number, steps: number) {
  const model = new GPT({ vocabSize: tok.vocabSize, ...cfg });
  const trainer = new SFTTrainer(model, { warmupSteps: 0 });
  const data = randomBatch(tok, rng, batch, cfg.contextLength);
  const ms = await timeMs(() => trainer.stepAsync(data), steps);
  // Positions trained per step: the model reads ctx − 1 inputs per row and predicts each next token.
  const tokens = batch * (cfg.contextLength - 1);
  const tps = tokens / (ms / 1000);
  const flopsPerToken = trainFlopsPerToken({ ...model.config });
  const mfu = (tps * flopsPerToken) / (machineGemm * 1e9);
  emit(`train_tokens_per_s_${name}`, tps, 'tokens/s', { ...backend, ...cfg, batch, stepMs: Number(ms.toFixed(1)), parameters: model.numParameters });
  emit(`mfu_${name}`, mfu, 'ratio', { ...backend, modelGflopsPerS: Number(((tps * flopsPerToken) / 1e9).toFixed(2)), flopsPerToken });
  trainer.dispose();
  model.dispose();
  return tps;
}

const tpsSmall = await trainThroughput('small', small, 64, 8);
const tpsLarge = await trainThroughput('large', large, 32, 5);

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
async function samplingThroughput(): Promise<number> {
  const model = new GPT({ vocabSize: tok.vocabSize, ...small, contextLength: sampling.contextLength });
  const prompts = Array.from({ length: sampling.prompts }, (_, i) => [tok.bos, ...tok.encode(`${i}+${(i * 7) % 50}=`)]);
  const opts = { maxTokens: sampling.newTokens, temperature: 1, stopAtEos: false, seed: 1 };
  const run = (useCache: boolean) => () => sampleAsync(model, tok, prompts, { ...opts, useCache });
  const cached = await timeMs(run(true), 3, 1);
  const recompute = await timeMs(run(false), 1, 0);
  const newTokens = sampling.prompts * sampling.newTokens;
  const samplePerS = newTokens / (cached / 1000);
  emit('sample_tokens_per_s', samplePerS, 'tokens/s', { ...backend, prompts: sampling.prompts, newTokens: sampling.newTokens, ms: Number(cached.toFixed(0)) });
  emit('sample_speedup_vs_recompute', recompute / cached, 'ratio', { ...backend, recomputeTokensPerS: Number((newTokens / (recompute / 1000)).toFixed(1)) });
  model.dispose();
  return samplePerS;
}
const samplePerS = await samplingThroughput();

// PyTorch again after ours, and its better figure of the two runs: load from elsewhere lands on
// one run or the other, and the ratios should not flatter us by catching PyTorch in a slow one.
const torchAfter = torchBefore ? torchFigures() : null;
const torch = torchBefore && torchAfter ? new Map([...torchBefore].map(([name, value]) => [name, Math.max(value, torchAfter.get(name) ?? 0)])) : null;

// Ratios to PyTorch eager on the same models (above 1: Whetstone is faster).
if (torch) {
  const ratio = (name: string, ours: number, theirs: string) => {
    const t = torch.get(theirs);
    if (t) emit(name, ours / t, 'ratio', { ...backend, torch: t });
  };
  ratio('train_vs_torch_small', tpsSmall, 'torch_train_tokens_per_s_small');
  ratio('train_vs_torch_large', tpsLarge, 'torch_train_tokens_per_s_large');
  ratio('sample_vs_torch', samplePerS, 'torch_sample_tokens_per_s');
  ratio('matmul_vs_torch', roof.gflops, 'torch_matmul_gflops');
}

// A pretrained model's size (SmolLM2-135M's shapes, random weights): KV-cached sampling and a LoRA step.
await pretrainedFigures(machineGemm, backend);
