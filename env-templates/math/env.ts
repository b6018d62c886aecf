/**
 * Math: data-dependent and single-turn. Each dataset row is an arithmetic problem; the reward is 1
 * for the exact answer on the first line of the completion.
 */
import { defineSingleTurn } from 'whetstone';

export interface MathRow {
  question: string;
  answer: number;
}

/** The first line of the completion, trimmed, without a trailing full stop. */
export function readAnswer(completion: string): string {
  return completion.split('\n')[0].trim().replace(/\.$/, '');
}

export default defineSingleTurn<MathRow>({
  name: 'math',
  description: 'Two-digit addition and subtraction, exact match.',
  systemPrompt: 'Compute. Answer with the number only.',
  rowSchema: {
    type: 'object',
    properties: {
      question: { type: 'string', description: 'e.g. "37+45"' },
      answer: { type: 'number', integer: true },
    },
  },
  prompt: (row) => `${row.question}=`,
  reward: (_prompt, completion, row) => {
    const given = readAnswer(completion);
    const correct = given === String(row.answer);
    return { reward: correct ? 1 : 0, info: { given, correct } };
  },
  bots: {
    oracle: (_observation, ctx) => String(ctx.task.answer),
    /** Right half the time, off by one otherwise: a reward distribution with both outcomes. */
    noisy: (_observation, ctx) => String(ctx.task.answer + (ctx.rng.bool() ? 0 : ctx.rng.pick([-1, 1]))),
  },
});
