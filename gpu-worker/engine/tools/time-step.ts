/**
 * Time of one training step (SFT, random tokens) as `bench:engine` runs it: minimum and median of
 * wall and CPU time over `steps` steps, as one JSON line. For A/B runs of two checkouts alternated
 * in a shell loop. `npx tsx gpu-worker/engine/tools/time-step.ts [L,d,H,ctx,batch] [steps]`
 */
import { initBackend } from '../backend';
import { GPT } from '../model';
import { Rng } from '../rng';
import { SFTTrainer } from '../sft';
import { CharTokenizer } from '../tokenizer';
import { randomBatch, stepShape } from './step-input';

await initBackend();
const tok = new CharTokenizer();
const rng = new Rng(0);
const { layers, width, heads, ctx, batch } = stepShape(process.argv[2]);
const steps = Number(process.argv[3] ?? 20);
const model = new GPT({ vocabSize: tok.vocabSize, layers, width, heads, contextLength: ctx });
const trainer = new SFTTrainer(model, { warmupSteps: 0 });
const data = randomBatch(tok, rng, batch, ctx);
for (let i = 0; i < 3; i++) trainer.step(data);
const wall: number[] = [];
const cpu: number[] = [];
let loss = 0;
for (let i = 0; i < steps; i++) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  loss = trainer.step(data).loss;
  wall.push(performance.now() - t0);
  const c = process.cpuUsage(c0);
  cpu.push((c.user + c.system) / 1000);
}
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: Number(s[0].toFixed(1)), median: Number(s[Math.floor(s.length / 2)].toFixed(1)) };
};
console.log(JSON.stringify({ wall: stats(wall), cpu: stats(cpu), loss: Number(loss.toFixed(5)) }));
