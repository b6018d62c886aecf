/**
 * Kernel profile of the pretrained LoRA step that bench:engine times (SmolLM2-135M's shapes, random
 * weights, rank 8 on every projection, 2 × 64 tokens): count and wall time per kernel name, as
 * profile-step.ts does for the GPT. `npx tsx gpu-worker/engine/tools/profile-pretrained.ts [steps] [layers]`
 * (layers: fewer than the model's 30 for a quicker look; the head's share then grows).
 * DETAIL=Name1,Name2 (or all) splits those kernels by input shapes. The time outside kernels is
 * tfjs's dispatch, the tape, and JavaScript between kernels.
 */
import * as tf from '@tensorflow/tfjs';
import { SMOLLM2_135M, randomDecoder } from '../../../bench/engine-pretrained';
import { initBackend } from '../backend';
import { attachLora } from '../lora';
import { parseDecoderConfig } from '../pretrained/hf-config';
import { Rng } from '../rng';
import { SFTTrainer } from '../sft';
import { timeKernels } from './kernel-times';

const report = await initBackend();
const steps = Number(process.argv[2] ?? 3);
const layers = Number(process.argv[3] ?? SMOLLM2_135M.num_hidden_layers);
const config = parseDecoderConfig({ ...SMOLLM2_135M, num_hidden_layers: layers });
const model = randomDecoder(config, 256);
attachLora(model, { rank: 8, alpha: 16, targets: ['attn', 'mlp'] });
const trainer = new SFTTrainer(model, { warmupSteps: 0 });
const rng = new Rng(5);
const data = Array.from({ length: 2 }, () => {
  const tokens = Array.from({ length: 64 }, () => 1 + rng.int(config.vocabSize - 1));
  return { tokens, lossMask: tokens.map((_, i) => (i === 0 ? 0 : 1)) };
});
await trainer.stepAsync(data);
// Wrapped after the warm-up step, so that kernels registered on first use are included.
const { stats, state } = timeKernels(report.backend);
state.recording = true;
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < steps; i++) await trainer.stepAsync(data);
const wall = (performance.now() - t0) / steps;
const cpu = process.cpuUsage(c0);
state.recording = false;
let total = 0;
let count = 0;
for (const [name, s] of [...stats].sort((a, b) => b[1].ms - a[1].ms)) {
  total += s.ms / steps;
  count += s.n / steps;
  console.log(`${name.padEnd(70)} ${(s.n / steps).toFixed(0).padStart(5)} ${(s.ms / steps).toFixed(2).padStart(8)} ms`);
}
console.log(`layers ${layers}: kernels ${count.toFixed(0)}, kernel time ${total.toFixed(1)} ms, step wall ${wall.toFixed(1)} ms, cpu ${((cpu.user + cpu.system) / 1000 / steps).toFixed(1)} ms, tensors ${tf.memory().numTensors}`);
trainer.dispose();
model.dispose();
