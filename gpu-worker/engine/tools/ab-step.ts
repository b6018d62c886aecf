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
import { minMedian, randomBatch, stepShape, timeSteps } from './step-input';

await initBackend();
const tok = new CharTokenizer();
const rng = new Rng(0);
const { layers, width, heads, ctx, batch } = stepShape(process.argv[2]);
const steps = Number(process.argv[3] ?? 10);
const data = randomBatch(tok, rng, batch, ctx);
const arms = [true, false].map((on) => {
  const trainer = new SFTTrainer(new GPT({ vocabSize: tok.vocabSize, layers, width, heads, contextLength: ctx }), { warmupSteps: 0 });
  const step = () => {
    setJsKernelsEnabled(on);
    trainer.step(data);
  };
  return { on, step };
});
const times = await timeSteps(arms.map((arm) => arm.step), steps, 2);
arms.forEach((arm, i) => {
  const wall = minMedian(times[i].wall);
  const cpu = minMedian(times[i].cpu);
  console.log(`js kernels ${arm.on ? 'on ' : 'off'}: wall median ${wall.median.toFixed(1)} min ${wall.min.toFixed(1)} ms, cpu median ${cpu.median.toFixed(1)} min ${cpu.min.toFixed(1)} ms`);
});
