/**
 * Kernel profile of one small SFT step: count and wall time per kernel name, by wrapping every
 * registered kernel of the current backend. `npx tsx gpu-worker/engine/tools/profile-step.ts`
 * On WebGPU a kernel's time is its dispatch (recording the GPU's work), not the GPU's work: a step's
 * wall time against its CPU time tells whether the CPU (dispatch) or the GPU bounds it.
 */
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../backend';
import { GPT } from '../model';
import { SFTTrainer } from '../sft';
import { CharTokenizer } from '../tokenizer';
import { randomBatch, stepShape } from './step-input';
import { Rng } from '../rng';
import { timeKernels } from './kernel-times';

const report = await initBackend();
const tok = new CharTokenizer();
const rng = new Rng(0);
const { layers, width, heads, ctx, batch } = stepShape(process.argv[2]);
const model = new GPT({ vocabSize: tok.vocabSize, layers, width, heads, contextLength: ctx });
const trainer = new SFTTrainer(model, { warmupSteps: 0 });
const data = randomBatch(tok, rng, batch, ctx);
for (let i = 0; i < 3; i++) await trainer.stepAsync(data);
// Wrapped after the warm-up steps, so that kernels registered on first use are included.
const { stats, state } = timeKernels(report.backend);
const steps = Number(process.argv[3] ?? 10);
state.recording = true;
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < steps; i++) await trainer.stepAsync(data);
const wall = (performance.now() - t0) / steps;
const cpu = process.cpuUsage(c0);
state.recording = false;
let total = 0;
let count = 0;
const rows = [...stats].sort((a, b) => b[1].n * b[1].min - a[1].n * a[1].min);
let quiet = 0;
for (const [name, s] of rows) {
  total += s.ms / steps;
  count += s.n / steps;
  quiet += (s.n / steps) * s.min;
  // "min" estimates the quiet-machine cost: calls per step × the fastest call seen.
  console.log(`${name.padEnd(60)} ${(s.n / steps).toFixed(0).padStart(5)} ${(s.ms / steps).toFixed(2).padStart(8)} ms  min ${((s.n / steps) * s.min).toFixed(2).padStart(7)} ms`);
}
console.log(`kernels ${count.toFixed(0)}, kernel time ${total.toFixed(1)} ms (from minima ${quiet.toFixed(1)} ms), step wall ${wall.toFixed(1)} ms, cpu ${((cpu.user + cpu.system) / 1000 / steps).toFixed(1)} ms, tensors ${tf.memory().numTensors}`);
