/**
 * Reward tests: run in the sandbox on every save; the dry-run report shows each with its actual
 * reward. A data-dependent environment's case gives its dataset row as the task.
 */
import { defineRewardTests } from 'whetstone';
import type { MathRow } from './env';

export default defineRewardTests<MathRow>([
  { name: 'the sum written ones digit first', task: { question: '07+45', answer: 52 }, completion: '250', expect: { reward: 1 } },
  { name: 'the usual order is wrong', task: { question: '07+45', answer: 52 }, completion: '52', expect: { reward: 0, info: { correct: false } } },
]);
