/**
 * A new environment: one agent guesses a number from 0 to 9 in up to three turns, told "higher"
 * or "lower" after each wrong guess. It is here to be replaced: keep the shape (a task per
 * episode, `reset` for the first observation, `step` for each action) and write your own task,
 * observations and reward. The README beside it says what each part is for.
 */
import { defineEnvironment } from 'whetstone';

/** What differs between episodes: drawn by `sample` from the episode's seeded rng. */
interface Task {
  secret: number;
}

/** What the environment remembers within an episode. */
interface State {
  guesses: number;
}

/** The number the action names (its first digit), or null when there is none. */
export function guessOf(action: string): number | null {
  const digit = /\d/.exec(action);
  return digit ? Number(digit[0]) : null;
}

export default defineEnvironment<Task, State>({
  name: 'blank',
  description: 'Guess a number from 0 to 9 in up to three turns.',
  systemPrompt: 'Answer with one digit.',
  sample: (rng) => ({ secret: rng.int(0, 10) }),
  reset(ctx) {
    ctx.state = { guesses: 0 };
    return 'Guess my number (0-9).';
  },
  step(action, ctx) {
    ctx.state.guesses += 1;
    const guess = guessOf(action);
    const right = guess === ctx.task.secret;
    const hint = guess === null ? 'Answer with a digit.' : guess < ctx.task.secret ? 'Higher.' : 'Lower.';
    return {
      observation: hint,
      // 1 for the right number, less the later it comes; 0 when it never does.
      reward: right ? 1 / ctx.state.guesses : 0,
      terminated: right,
      truncated: !right && ctx.state.guesses >= 3,
      info: { guess, right },
    };
  },
  bots: {
    /** Knows the answer: the reward's upper bound, and a check of the reward. */
    oracle: (_observation, ctx) => String(ctx.task.secret),
    random: (_observation, ctx) => String(ctx.rng.int(0, 10)),
  },
});
