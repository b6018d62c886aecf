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
import { minMedian, randomBatch, stepShape, timeSteps } from './step-input';

await initBackend();
const tok = new CharTokenizer();
const rng = new Rng(0);
const { layers, width, heads, ctx, batch } = stepShape(process.argv[2]);
const steps = Number(process.argv[3] ?? 20);
const model = new GPT({ vocabSize: tok.vocabSize, layers, width, heads, contextLength: ctx });
const trainer = new SFTTrainer(model, { warmupSteps: 0 });
const data = randomBatch(tok, rng, batch, ctx);
let loss = 0;
const step = async () => {
  loss = (await trainer.stepAsync(data)).loss;
};
const [{ wall, cpu }] = await timeSteps([step], steps, 3);
console.log(JSON.stringify({ wall: minMedian(wall), cpu: minMedian(cpu), loss: Number(loss.toFixed(5)) }));
