/**
 * `npx tsx gpu-worker/engine/tools/parity.ts [backend]`: the engine on `backend` (default webgpu)
 * against the cpu backend on one small model: forward logits, the loss's gradients and two SFT
 * steps, as JSON lines of the largest relative difference (|a − b| / (1 + |b|)). For a GPU machine,
 * where the test suite does not run (webgpu.test.ts is the test; this is its measurement).
 */
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../backend';
import { prepareBatch } from '../batch';
import { maskedNll } from '../losses';
import { GPT } from '../model';
import { targetLogProbs } from '../ops';
import { gradients } from '../optim';
import { Rng } from '../rng';
import { SFTTrainer } from '../sft';
import { CharTokenizer } from '../tokenizer';
import { randomBatch } from './step-input';

const target = process.argv[2] ?? 'webgpu';
const tok = new CharTokenizer();
const config = { vocabSize: tok.vocabSize, layers: 2, width: 64, heads: 4, contextLength: 32, seed: 3 };
const data = randomBatch(tok, new Rng(1), 8, config.contextLength);
const b = prepareBatch(data, tok.pad);

async function measure(backend: string) {
  await initBackend(backend);
  const m = new GPT(config);
  const logits = tf.tidy(() => m.forward(b.inputs).logits);
  const { value, grads } = gradients(
    () => maskedNll(targetLogProbs(m.forward(b.inputs).logits, tf.tensor1d(b.targets, 'int32')), tf.tensor1d(b.mask)),
    m.trainableVariables(),
  );
  const out = { logits: await logits.data(), loss: (await value.data())[0], grads: [] as Float32Array[], steps: [] as number[], params: [] as Float32Array[] };
  for (const g of grads.values()) out.grads.push((await g.data()) as Float32Array);
  tf.dispose([logits, value, ...grads.values()]);
  const trainer = new SFTTrainer(m, { learningRate: 1e-3, warmupSteps: 0 });
  for (let i = 0; i < 2; i++) out.steps.push((await trainer.stepAsync(data)).loss);
  for (const v of m.params.values()) out.params.push((await v.data()) as Float32Array);
  trainer.dispose();
  m.dispose();
  return out;
}

function worst(a: ArrayLike<number>[], b: ArrayLike<number>[]): number {
  let w = 0;
  a.forEach((x, j) => {
    for (let i = 0; i < x.length; i++) w = Math.max(w, Math.abs(x[i] - b[j][i]) / (1 + Math.abs(b[j][i])));
  });
  return Number(w.toPrecision(3));
}

const cpu = await measure('cpu');
const other = await measure(target);
const line = (name: string, value: number, extra: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ name, value, backend: target, versus: 'cpu', ...extra })}\n`);
line('logits_max_rel_diff', worst([other.logits], [cpu.logits]));
line('loss_abs_diff', Number(Math.abs(other.loss - cpu.loss).toPrecision(3)), { loss: other.loss, cpuLoss: cpu.loss });
line('grads_max_rel_diff', worst(other.grads, cpu.grads));
line('sft_step_losses', worst([other.steps], [cpu.steps]), { losses: other.steps, cpuLosses: cpu.steps });
line('params_after_2_steps_max_rel_diff', worst(other.params, cpu.params));
