/**
 * Math: data-dependent and single-turn. Each dataset row is a two-digit addition; the reward is 1
 * for the exact answer on the first line of the completion.
 *
 * The answer is written least-significant digit first and padded to three digits: 07+45 → "250"
 * (52). That is the order the sum is computed in, ones column first with the carry moving left,
 * so each digit depends only on the operands and the digit before it; a small transformer trained
 * from scratch learns addition far faster this way than most-significant digit first (Lee et al.,
 * "Teaching Arithmetic to Small Transformers", 2023). See README.md.
 */
import { defineSingleTurn } from 'whetstone';

export interface MathRow {
  question: string;
  answer: number;
}

/** How the answer is written: three digits, ones first (52 → "250"). */
export function writtenAnswer(answer: number): string {
  return [...String(answer).padStart(3, '0')].reverse().join('');
}

/** The first line of the completion, trimmed, without a trailing full stop. */
export function readAnswer(completion: string): string {
  return completion.split('\n')[0].trim().replace(/\.$/, '');
}

export default defineSingleTurn<MathRow>({
  name: 'math',
  description: 'Two-digit addition, answer written ones digit first, exact match.',
  // Brief on purpose: a model trained from scratch attends to every prompt token, and a longer
  // constant prefix dilutes the operands' signal early on ("Add, ones first." took twice the SFT
  // steps to reach the first correct answers).
  systemPrompt: 'Add.',
  rowSchema: {
    type: 'object',
    properties: {
      question: { type: 'string', description: 'e.g. "07+45"' },
      answer: { type: 'number', integer: true, description: 'the sum, e.g. 52 (written "250")' },
    },
  },
  prompt: (row) => `${row.question}=`,
  reward: (_prompt, completion, row) => {
    const given = readAnswer(completion);
    const correct = given === writtenAnswer(row.answer);
    // `read`: the number the model wrote, back in the usual order, for people reading rollouts.
    const read = /^\d+$/.test(given) ? Number([...given].reverse().join('')) : null;
    return { reward: correct ? 1 : 0, info: { given, read, correct } };
  },
  bots: {
    oracle: (_observation, ctx) => writtenAnswer(ctx.task.answer),
    /** Right half the time, off by one otherwise: a reward distribution with both outcomes. */
    noisy: (_observation, ctx) => writtenAnswer(Math.max(0, ctx.task.answer + (ctx.rng.bool() ? 0 : ctx.rng.pick([-1, 1])))),
  },
});
