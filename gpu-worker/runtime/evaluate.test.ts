import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CharTokenizer } from '../engine/tokenizer';
import { loadTemplate, templateRows } from '../../env-templates/load-template';
import { openInSandbox } from '../../env-templates/test-support/template-harness';
import { MultiAgentCoordinator } from './coordinator';
import { demonstrationSequences } from './demonstrations';
import { evaluateSeatSwitching } from './evaluate';
import { playEpisode } from './play-episode';
import { type RolloutConfig, runRollouts } from './rollout';
import { type SandboxEnvironment } from './sandbox/sandbox-environment';
import { ScriptedPolicy } from './scripted-policy';

const tok = new CharTokenizer();
const SIZE = 5;
// The spaced grid: the scripted policies below read its cells.
const VARIANT = `import { createGomoku } from './env';\nexport default createGomoku({ size: ${SIZE}, winLength: 3, observation: 'grid' });\n`;
const rollout: RolloutConfig = { maxTurns: 13, maxTokensPerTurn: 16, maxResponseTokens: 208, contextLength: 1024, temperature: 1, seed: 0 };

/** The cells of the board in the latest observation of a prompt. */
function cellsOf(promptText: string): string[] {
  const user = promptText.split('<|user|>').pop()!.split('<eos>')[0];
  return user.split('\n').slice(1, SIZE + 1).flatMap((line) => line.trim().split(/\s+/).slice(1));
}

/** Plays the first empty cell in reading order: against a random opponent it mostly completes row 1. */
const firstEmpty = new ScriptedPolicy(tok, (prompt) => {
  const k = cellsOf(prompt).indexOf('.');
  return `<move>${Math.floor(k / SIZE) + 1},${(k % SIZE) + 1}</move>`;
});
const alwaysCentre = new ScriptedPolicy(tok, () => '<move>3,3</move>');

let env: SandboxEnvironment;
beforeAll(async () => {
  env = await openInSandbox(loadTemplate('gomoku'), { 'variant.ts': VARIANT }, 'variant.ts');
});
afterAll(async () => {
  await env.dispose();
});

describe('seat-switching evaluation', () => {
  test('the policy plays each seat in turn, rounds share their seeds, results add up', async () => {
    const result = await evaluateSeatSwitching({ env, tokenizer: tok, policies: { p: firstEmpty }, policy: 'p', opponent: 'random', rounds: 20, rollout, seed: 4 });
    expect(result.games).toBe(40);
    expect(result.seats).toEqual(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 'black' : 'white')));
    expect(result.bySeat.black.games).toBe(20);
    expect(result.bySeat.white.games).toBe(20);
    expect(result.wins + result.losses + result.draws).toBe(40);
    expect(result.bySeat.black.wins + result.bySeat.white.wins).toBe(result.wins);
    result.rollouts.forEach((r, i) => {
      const seat = result.seats[i];
      // Black moves first: the policy's first move is the first move exactly when it sits at black.
      expect(r.moves[0].byBot).toBe(seat !== 'black');
      expect(r.moves.filter((m) => !m.byBot).every((m) => m.agent === seat)).toBe(true);
    });
    // The first-empty-cell player beats a random one from either seat, and more often as black.
    expect(result.winRate).toBeGreaterThan(0.6);
    expect(result.bySeat.black.winRate).toBeGreaterThanOrEqual(result.bySeat.white.winRate);
    // Deterministic with a seed.
    const again = await evaluateSeatSwitching({ env, tokenizer: tok, policies: { p: firstEmpty }, policy: 'p', opponent: 'random', rounds: 20, rollout, seed: 4 });
    expect(again.rollouts.map((r) => r.moves.map((m) => m.text))).toEqual(result.rollouts.map((r) => r.moves.map((m) => m.text)));
  });

  test('an invalid move is a loss from both seats', async () => {
    const result = await evaluateSeatSwitching({ env, tokenizer: tok, policies: { p: alwaysCentre }, policy: 'p', opponent: 'scripted', rounds: 8, rollout, seed: 1 });
    // As black it plays 3,3 first, then 3,3 again (taken); as white 3,3 is taken at once or later.
    expect(result.losses).toBe(16);
    expect(result.winRate).toBe(0);
    expect(result.meanReturn).toBe(-1);
  });

  test('unknown policies and bots are refused', async () => {
    await expect(evaluateSeatSwitching({ env, tokenizer: tok, policies: { p: firstEmpty }, policy: 'q', opponent: 'random', rounds: 1, rollout, seed: 0 })).rejects.toThrow('no policy "q"');
    await expect(evaluateSeatSwitching({ env, tokenizer: tok, policies: { p: firstEmpty }, policy: 'p', opponent: 'grandmaster', rounds: 1, rollout, seed: 0 })).rejects.toThrow('no bot "grandmaster"');
  });
});

describe('coordinator with switching seats', () => {
  test('one learner plays both colours, each group from one seat, one batch from all seats', async () => {
    const batches: number[] = [];
    const coordinator = new MultiAgentCoordinator({
      env,
      tokenizer: tok,
      policies: { p: { policy: firstEmpty, trainer: { train: async (batch) => (batches.push(batch.length), {}) } } },
      learners: { black: 'p' },
      switchSeats: true,
      opponents: { random: 1 },
      rollout,
      tasksPerStep: 2,
      groupSize: 3,
      seed: 1,
    });
    for (let step = 0; step < 2; step++) {
      const report = await coordinator.runStep();
      const learnerSeat = report.rollouts.map((r) => Object.values(r.agents).find((a) => a.learn)!.agent);
      // Task t of step s seats the learner at agents[(0 + t + s) % 2]; groups are named by seat.
      const expected = [0, 1].flatMap((t) => new Array<string>(3).fill(['black', 'white'][(t + step) % 2]));
      expect(learnerSeat).toEqual(expected);
      for (const r of report.rollouts) expect(r.group.endsWith(`-${learnerSeat[report.rollouts.indexOf(r)]}`)).toBe(true);
      expect(batches[step]).toBe(report.rollouts.reduce((n, r) => n + Object.values(r.agents).filter((a) => a.learn).reduce((m, a) => m + a.sequences.length, 0), 0));
      expect(report.opponents.every((o) => Object.values(o).every((name) => name === 'random'))).toBe(true);
    }
  });

  test('switching seats needs exactly one learner', () => {
    const trainer = { train: async () => ({}) };
    expect(
      () =>
        new MultiAgentCoordinator({ env, tokenizer: tok, policies: { p: { policy: firstEmpty, trainer } }, learners: { black: 'p', white: 'p' }, switchSeats: true, rollout, tasksPerStep: 1, groupSize: 1, seed: 0 }),
    ).toThrow('exactly one learner');
  });
});

describe('demonstrations', () => {
  test('a demonstrated game gives the very sequences a rollout of the same moves gives (latest context)', async () => {
    const specs = [0, 1].map((i) => ({ episodeId: `r${i}`, group: 'g', seed: 50 + i, taskSeed: 50 + i, players: { black: { kind: 'policy' as const, policy: 'p', learn: true }, white: { kind: 'bot' as const, bot: 'random' } } }));
    // Room for the EOS after the 16-character move, as a demonstration ends its action with EOS.
    const rollouts = await runRollouts(env, tok, { p: firstEmpty }, specs, { ...rollout, maxTokensPerTurn: 17 });
    const transcripts = await Promise.all(
      rollouts.map((r, i) => {
        const texts = r.moves.map((m) => m.text);
        return playEpisode(env, { episodeId: `d${i}`, seed: 50 + i, taskSeed: 50 + i, maxTurns: 13, actor: () => texts.shift()! });
      }),
    );
    const demos = demonstrationSequences(tok, transcripts, { context: 'latest', contextLength: 1024, agents: ['black'] });
    const fromRollouts = rollouts.flatMap((r) => r.agents.black.sequences);
    expect(demos.length).toBe(fromRollouts.length);
    expect(demos.map((d) => d.tokens)).toEqual(fromRollouts.map((s) => s.tokens));
    expect(demos.map((d) => d.lossMask)).toEqual(fromRollouts.map((s) => s.lossMask));
  });

  test('full context: a math oracle episode matches the rollout layout; long sequences are dropped', async () => {
    const template = loadTemplate('math');
    const math = await openInSandbox(template);
    try {
      const row = templateRows(template, 'train', math.description.rowSchema!)[0];
      // The template writes the sum ones digit first, padded to three digits (52 → "250").
      const oracle = new ScriptedPolicy(tok, () => [...String((row as { answer: number }).answer).padStart(3, '0')].reverse().join(''));
      const [r] = await runRollouts(math, tok, { p: oracle }, [{ episodeId: 'm', group: 'g', seed: 1, taskSeed: 1, row, players: { agent: { kind: 'policy', policy: 'p', learn: true } } }], { ...rollout, maxTurns: 1, contextLength: 64 });
      const t = await playEpisode(math, { episodeId: 'md', seed: 1, taskSeed: 1, row, maxTurns: 1, actor: (_a, _o, id) => math.bot({ episodeId: id, bot: 'oracle' }) });
      const [demo] = demonstrationSequences(tok, [t], { context: 'full', toolPrompt: math.description.toolPrompt, contextLength: 64 });
      expect(demo.tokens).toEqual(r.agents.agent.sequences[0].tokens);
      expect(demo.lossMask).toEqual(r.agents.agent.sequences[0].lossMask);
      expect(demonstrationSequences(tok, [t], { context: 'full', contextLength: demo.tokens.length - 1 })).toEqual([]);
    } finally {
      await math.dispose();
    }
  });
});
