/**
 * Bandit: the smallest learning check. Each task shows a colour; the agent picks one of four arms;
 * a hidden rule maps colours to the paying arm. A policy that learns the rule earns 1 every time,
 * a random one 0.25 on average.
 */
import { defineSingleTurn } from 'whetstone';

export const COLOURS = ['red', 'green', 'blue', 'yellow'] as const;
export const ARMS = ['A', 'B', 'C', 'D'] as const;
/** The hidden rule: not the obvious order, so that a policy cannot guess it from position. */
const PAYING_ARM: Record<(typeof COLOURS)[number], (typeof ARMS)[number]> = { red: 'C', green: 'A', blue: 'D', yellow: 'B' };

export interface BanditTask {
  colour: (typeof COLOURS)[number];
}

/** The arm the completion chose: its first letter A–D, ignoring spaces; null when there is none. */
export function chosenArm(completion: string): string | null {
  const first = completion.trim().charAt(0).toUpperCase();
  return (ARMS as readonly string[]).includes(first) ? first : null;
}

export default defineSingleTurn<BanditTask>({
  name: 'bandit',
  description: 'Pick the arm that pays for the colour shown.',
  systemPrompt: 'Answer with one letter: A, B, C or D.',
  sample: (rng) => ({ colour: rng.pick(COLOURS) }),
  prompt: (task) => `colour: ${task.colour}\narm:`,
  reward: (_prompt, completion, task) => {
    const arm = chosenArm(completion);
    return { reward: arm === PAYING_ARM[task.colour] ? 1 : 0, info: { arm, valid: arm !== null } };
  },
  bots: {
    oracle: (_observation, ctx) => PAYING_ARM[ctx.task.colour],
    random: (_observation, ctx) => ctx.rng.pick(ARMS),
  },
});
