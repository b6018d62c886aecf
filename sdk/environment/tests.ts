import { type Json } from './schema';

/**
 * Reward unit tests: small cases in an environment's `tests.ts` file, run in the sandbox when a
 * version is saved, each with its actual reward in the dry-run report.
 *
 *     import { defineRewardTests } from 'whetstone';
 *     import type { BanditTask } from './env';
 *
 *     export default defineRewardTests<BanditTask>([
 *       { name: 'red pays on C', task: { colour: 'red' }, completion: 'C', expect: { reward: 1 } },
 *       { name: 'garbage earns nothing', task: { colour: 'red' }, completion: '???', expect: { reward: 0 } },
 *     ]);
 */

/** The file whose default export holds an environment's reward tests. */
export const REWARD_TESTS_FILE = 'tests.ts';

/** What a case expects. The reward is the checked agent's rewards summed over the actions played. */
export interface RewardExpectation {
  /** Exactly this reward (within 1e-9). */
  reward?: number;
  /** At least this reward. */
  rewardAtLeast?: number;
  /** At most this reward. */
  rewardAtMost?: number;
  /** These fields of the last step's `info`, each equal (deeply) to the value given. */
  info?: Record<string, Json>;
}

/** One case: a task, what the agents write, and what the reward must be. */
export interface RewardTestCase<Task = unknown> {
  /** Shown in the report; also how the report finds the case's line in tests.ts. */
  name: string;
  /**
   * The task: what a data-free environment's `sample` would return, or the dataset row of a
   * data-dependent one (required there). Without it the task is sampled from `seed`.
   */
  task?: Task;
  /** Seeds the episode (and the task when none is given). Default 1. */
  seed?: number;
  /** A single-turn completion: the same as `actions: [completion]`. */
  completion?: string;
  /** The texts the agents write, in turn order (every agent's, for multi-agent environments). */
  actions?: readonly string[];
  /** Whose reward is checked; the first agent by default. */
  agent?: string;
  expect: RewardExpectation;
}

/** What `defineRewardTests` returns; the default export of tests.ts. */
export interface RewardTests {
  readonly __whetstone: 'reward-tests';
  readonly cases: readonly RewardTestCase[];
  /** The stack where the cases were defined: errors in them point there. */
  readonly definedAt: string;
}

/** Declares an environment's reward tests; `Task` types each case's task (or dataset row). */
export function defineRewardTests<Task = unknown>(cases: readonly RewardTestCase<Task>[]): RewardTests {
  if (!Array.isArray(cases)) throw new TypeError('defineRewardTests takes an array of cases');
  return { __whetstone: 'reward-tests', cases: cases as readonly RewardTestCase[], definedAt: new Error().stack ?? '' };
}
