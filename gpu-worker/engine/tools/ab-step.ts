/**
 * A/B of one training step with the JavaScript kernels on and off, alternating step by step in one
 * process so that both see the same machine load. `npx tsx gpu-worker/engine/tools/ab-step.ts [L,d,H,ctx,batch] [steps]`
 */
import { initBackend } from '../backend';
import { setJsKernelsEnabled } from '../kernels';
import { GPT } from '../model';
import { Rng } from '../rng';
import { SFTTrainer } from '../sft';
import { CharTokenizer } from '../tokenizer';
import { randomBatch, stepShape } from './step-input';

await initBackend();
const tok = new CharTokenizer();
const rng = new Rng(0);
const { layers, width, heads, ctx, batch } = stepShape(process.argv[2]);
const steps = Number(process.argv[3] ?? 10);
const data = randomBatch(tok, rng, batch, ctx);
const arms = [true, false].map((on) => {
  const model = new GPT({ vocabSize: tok.vocabSize, layers, width, heads, contextLength: ctx });
  return { on, model, trainer: new SFTTrainer(model, { warmupSteps: 0 }), wall: [] as number[], cpu: [] as number[] };
});
for (let i = 0; i < steps + 2; i++) {
  for (const arm of arms) {
    setJsKernelsEnabled(arm.on);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    arm.trainer.step(data);
    const c = process.cpuUsage(c0);
    if (i < 2) continue;
    arm.wall.push(performance.now() - t0);
    arm.cpu.push((c.user + c.system) / 1000);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const arm of arms) {
  console.log(`js kernels ${arm.on ? 'on ' : 'off'}: wall median ${median(arm.wall).toFixed(1)} min ${Math.min(...arm.wall).toFixed(1)} ms, cpu median ${median(arm.cpu).toFixed(1)} min ${Math.min(...arm.cpu).toFixed(1)} ms`);
}
