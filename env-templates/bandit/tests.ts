/**
 * Reward tests: run in the sandbox on every save; the dry-run report shows each with its actual
 * reward. A case names a task, what the agent writes, and the reward it must earn.
 */
import { defineRewardTests } from 'whetstone';
import type { BanditTask } from './env';

export default defineRewardTests<BanditTask>([
  { name: 'red pays on C', task: { colour: 'red' }, completion: 'C', expect: { reward: 1, info: { arm: 'C', valid: true } } },
  { name: 'a wrong arm earns nothing', task: { colour: 'red' }, completion: 'A', expect: { reward: 0 } },
  { name: 'no arm at all is invalid', task: { colour: 'blue' }, completion: '???', expect: { reward: 0, info: { valid: false } } },
]);
