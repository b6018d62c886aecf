/**
 * Kernel profile of KV-cached sampling as `bench:engine` runs it (small model, context 96, 64
 * prompts, 64 new tokens): count and wall time per kernel name per decoding step, plus the time
 * spent outside kernels. `npx tsx gpu-worker/engine/tools/profile-sample.ts [runs] [cache|recompute]`
 */
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../backend';
import { GPT } from '../model';
import { sampleAsync } from '../sampler';
import { CharTokenizer } from '../tokenizer';
import { timeKernels } from './kernel-times';

const report = await initBackend();
const tok = new CharTokenizer();
const model = new GPT({ vocabSize: tok.vocabSize, layers: 2, width: 64, heads: 4, contextLength: 96 });
const prompts = Array.from({ length: 64 }, (_, i) => [tok.bos, ...tok.encode(`${i}+${(i * 7) % 50}=`)]);
const useCache = process.argv[3] !== 'recompute';
const run = () => sampleAsync(model, tok, prompts, { maxTokens: 64, temperature: 1, stopAtEos: false, seed: 1, useCache });
await run();
await run();
// By kernel name only (DETAIL does not apply here): wrapped after two warm-up runs.
const { stats, state } = timeKernels(report.backend, []);
const runs = Number(process.argv[2] ?? 3);
const steps = 64 * runs;
state.recording = true;
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < runs; i++) await run();
const wall = performance.now() - t0;
const cpu = process.cpuUsage(c0);
state.recording = false;
let total = 0;
let count = 0;
for (const [name, s] of [...stats].sort((a, b) => b[1].ms - a[1].ms)) {
  total += s.ms;
  count += s.n;
  console.log(`${name.padEnd(40)} ${(s.n / steps).toFixed(1).padStart(6)}/step ${((s.ms / steps) * 1000).toFixed(0).padStart(7)} µs/step  min call ${(s.min * 1000).toFixed(0)} µs`);
}
console.log(`kernels ${(count / steps).toFixed(1)}/step, kernel time ${(total / steps).toFixed(2)} ms/step, wall ${(wall / steps).toFixed(2)} ms/step (outside kernels ${((wall - total) / steps).toFixed(2)}), cpu ${((cpu.user + cpu.system) / 1000 / steps).toFixed(2)} ms/step, per sample() ${(wall / runs).toFixed(0)} ms, tensors ${tf.memory().numTensors}`);
