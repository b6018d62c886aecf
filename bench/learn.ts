/**
 * `npm run bench:learn`: what this machine learns in minutes. SFT then GRPO on 2-digit addition,
 * judged by greedy exact match on held-out problems. One JSON object per line.
 *
 * Format: "<bos>07+45=" → "250<eos>": operands zero-padded to two digits, the sum (052) padded to
 * three and written least-significant digit first. Writing the answer in the order it is computed
 * (with the carry) is the standard way small transformers learn to add (Lee et al., "Teaching
 * Arithmetic to Small Transformers", 2023).
 *
 * Figures:
 * - seconds_to_90: wall seconds (evaluation included) from the first SFT step until held-out exact
 *   match first reaches 90%;
 * - accuracy_sft_only / accuracy_after_grpo: held-out exact match after the same budget spent on
 *   SFT alone (LEARN_SFT_STEPS, default 600 steps of 128 problems, short of saturation) versus SFT
 *   for the first 75% of those steps and then GRPO for as many seconds as the SFT-only run spent
 *   training on the remaining 25% (32 prompts × 8 samples per step, lr LEARN_GRPO_LR, default 1e-4
 *   as measured in OFFLINE.md).
 */
import { type Sequence } from '../gpu-worker/engine/batch';
import { initBackend } from '../gpu-worker/engine/backend';
import { GRPOTrainer } from '../gpu-worker/engine/grpo';
import { type GPT, frozenCopy } from '../gpu-worker/engine/model';
import { Rng } from '../gpu-worker/engine/rng';
import { sample } from '../gpu-worker/engine/sampler';
import { SFTTrainer } from '../gpu-worker/engine/sft';
import { CharTokenizer } from '../gpu-worker/engine/tokenizer';
import { GPT as Model } from '../gpu-worker/engine/model';
import { emit } from './engine-measure';

/** SFT steps of the SFT-only run, and the step at which the other run switches to GRPO. */
const TOTAL_STEPS = Number(process.env.LEARN_SFT_STEPS ?? 600);
const SWITCH_STEP = Math.round(TOTAL_STEPS * 0.75);
const EVAL_EVERY_STEPS = 25;
/** Give up on reaching 90% after this many seconds. */
const CAP_S = 300;

const report = await initBackend();
const tok = new CharTokenizer('0123456789+=');
const pad2 = (n: number) => String(n).padStart(2, '0');
const answerOf = (a: number, b: number) => [...String(a + b).padStart(3, '0')].reverse().join('');
const promptOf = (a: number, b: number) => [tok.bos, ...tok.encode(`${pad2(a)}+${pad2(b)}=`)];

// All 10 000 problems, 500 held out.
const rng = new Rng(0);
const problems = rng.shuffle(Array.from({ length: 10000 }, (_, i) => [Math.floor(i / 100), i % 100] as const));
const heldOut = problems.slice(0, 500);
const train = problems.slice(500);

function example(a: number, b: number): Sequence {
  const prompt = promptOf(a, b);
  const answer = [...tok.encode(answerOf(a, b)), tok.eos];
  return { tokens: [...prompt, ...answer], lossMask: [...prompt.map(() => 0), ...answer.map(() => 1)] };
}

function accuracy(model: GPT): number {
  const out = sample(model, tok, heldOut.map(([a, b]) => promptOf(a, b)), { temperature: 0, maxTokens: 4 });
  return out.filter((r, i) => r.finishReason === 'eos' && r.text === answerOf(...heldOut[i])).length / heldOut.length;
}

const modelConfig = { vocabSize: tok.vocabSize, contextLength: 12, layers: 2, width: 64, heads: 4, seed: 0 };
const model = new Model(modelConfig);
const sft = new SFTTrainer(model, { learningRate: 3e-3, warmupSteps: 30, seed: 0 });
const batchSize = 128;

const start = performance.now();
const elapsed = () => (performance.now() - start) / 1000;
let secondsTo90: number | null = null;
let stepsTo90 = 0;
let snapshot: GPT | null = null;
let snapshotAccuracy = 0;
let sftOnly: number | null = null;
// Seconds spent inside SFT steps (evaluation excluded) after the switch step: GRPO's budget.
let trainSecondsAfterSwitch = 0;
let step = 0;
// SFT runs until TOTAL_STEPS and until 90% is reached (or the cap). The switch is a step count, not
// a time, so that a busy machine does not move it across the sharp rise of this task's curve.
for (;;) {
  if (step === SWITCH_STEP) {
    snapshot = frozenCopy(model);
    snapshotAccuracy = accuracy(model);
  }
  if (step === TOTAL_STEPS) sftOnly = accuracy(model);
  if (step >= TOTAL_STEPS && (secondsTo90 !== null || elapsed() >= CAP_S)) break;
  const t0 = performance.now();
  sft.step(Array.from({ length: batchSize }, () => example(...train[rng.int(train.length)])));
  if (step >= SWITCH_STEP && step < TOTAL_STEPS) trainSecondsAfterSwitch += (performance.now() - t0) / 1000;
  step++;
  if (secondsTo90 === null && step % EVAL_EVERY_STEPS === 0 && accuracy(model) >= 0.9) {
    secondsTo90 = elapsed();
    stepsTo90 = step;
  }
}
emit('seconds_to_90', secondsTo90 ?? CAP_S, 's', {
  backend: report.backend,
  reached: secondsTo90 !== null,
  sftStepsTo90: secondsTo90 !== null ? stepsTo90 : null,
  batch: batchSize,
  heldOut: heldOut.length,
  model: { layers: 2, width: 64, heads: 4 },
});
emit('accuracy_sft_only', sftOnly!, 'exact match', { sftSteps: TOTAL_STEPS });

// The same budget: SFT up to SWITCH_STEP, then GRPO for as long as SFT spent on the remaining steps.
const grpoBudget = trainSecondsAfterSwitch;
const grpo = new GRPOTrainer(snapshot!, { learningRate: Number(process.env.LEARN_GRPO_LR ?? 1e-4), clipLow: 0.2, clipHigh: 0.28, seed: 1 });
const g0 = performance.now();
let grpoSteps = 0;
const prompts = 32;
const group = 8;
let rewardMean = 0;
while ((performance.now() - g0) / 1000 < grpoBudget) {
  const picks = Array.from({ length: prompts }, () => train[rng.int(train.length)]);
  const flat = picks.flatMap((p) => new Array<readonly [number, number]>(group).fill(p));
  const outs = sample(snapshot!, tok, flat.map(([a, b]) => promptOf(a, b)), { temperature: 1, maxTokens: 4, seed: grpoSteps });
  const batch: Sequence[] = outs.map((r, i) => {
    const prompt = promptOf(...flat[i]);
    return {
      tokens: [...prompt, ...r.tokens],
      lossMask: [...prompt.map(() => 0), ...r.tokens.map(() => 1)],
      rewards: r.finishReason === 'eos' && r.text === answerOf(...flat[i]) ? 1 : 0,
      group: Math.floor(i / group),
    };
  });
  rewardMean = grpo.step(batch).rewardMean ?? 0;
  grpoSteps++;
}
const afterGrpo = accuracy(snapshot!);
emit('accuracy_after_grpo', afterGrpo, 'exact match', {
  sftSteps: SWITCH_STEP,
  grpoSeconds: Number(grpoBudget.toFixed(1)),
  accuracyAtSwitch: snapshotAccuracy,
  grpoSteps,
  promptsPerStep: prompts,
  group,
  lastRewardMean: rewardMean,
});
