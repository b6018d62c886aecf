import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CharTokenizer } from '../engine/tokenizer';
import { Rng } from '../../sdk/environment/rng';
import { loadTemplate } from '../../env-templates/load-template';
import { openInSandbox } from '../../env-templates/test-support/template-harness';
import { type SandboxEnvironment } from './sandbox/sandbox-environment';
import { type CoordinatorEvent, type CoordinatorOptions, drawSnapshot, MultiAgentCoordinator, type PolicySlot, type StepReport } from './coordinator';
import { type GenerateOptions, type Policy, type SampleResult, type Sequence } from './policy';

const tok = new CharTokenizer();
const SIZE = 9;

/** The board of the latest observation in a prompt: cells as '.', 'X', 'O'. */
function boardOf(promptText: string): string[] {
  const user = promptText.split('<|user|>').pop()!.split('<eos>')[0];
  return user.split('\n').slice(1, SIZE + 1).flatMap((line) => line.trim().split(/\s+/).slice(1));
}

/**
 * A tiny learning Gomoku policy: one weight per cell; it plays the legal cell with the highest
 * weight plus seeded noise, and training adds each move's return to its cell's weight.
 */
class ToyPolicy implements Policy {
  constructor(readonly weights = new Float64Array(SIZE * SIZE)) {}

  async generate(prompts: number[][], options: GenerateOptions): Promise<SampleResult[]> {
    return prompts.map((prompt, i) => {
      const cells = boardOf(tok.decode(prompt, { keepSpecial: true }));
      const rng = new Rng(options.seed * 31 + i);
      let best = -1;
      let bestScore = -Infinity;
      cells.forEach((c, k) => {
        const score = this.weights[k] + rng.next();
        if (c === '.' && score > bestScore) [best, bestScore] = [k, score];
      });
      const text = `<move>${Math.floor(best / SIZE) + 1},${(best % SIZE) + 1}</move>`;
      const tokens = [...tok.encode(text), tok.eos];
      return { tokens, text, logprobs: tokens.map(() => -1), finishReason: 'eos' as const };
    });
  }

  train(batch: Sequence[], delayMs = 0): Promise<Record<string, number>> {
    for (const seq of batch) {
      const cell = moveCell(seq);
      this.weights[cell] += 0.1 * (seq.rewards as number);
    }
    return new Promise((resolve) => setTimeout(() => resolve({ sequences: batch.length }), delayMs));
  }
}

function moveCell(seq: Sequence): number {
  const generated = tok.decode(seq.tokens.filter((_, i) => seq.lossMask[i] === 1));
  const [, r, c] = /<move>(\d+),(\d+)<\/move>/.exec(generated)!;
  return (Number(r) - 1) * SIZE + Number(c) - 1;
}

function slot(policy: ToyPolicy, delayMs: number, seen: Sequence[][]): PolicySlot {
  return {
    policy,
    trainer: {
      train: (batch) => {
        seen.push(batch);
        return policy.train(batch, delayMs);
      },
    },
    freeze: async () => new ToyPolicy(policy.weights.slice()),
  };
}

let env: SandboxEnvironment;
beforeAll(async () => {
  // The spaced grid and the full instructions: the toy policy reads cells and sides from them.
  env = await openInSandbox(loadTemplate('gomoku'), { 'grid.ts': "import { createGomoku } from './env';\nexport default createGomoku({ observation: 'grid', instructions: 'full' });\n" }, 'grid.ts');
});
afterAll(() => env.dispose());

function options(overrides: Partial<CoordinatorOptions>): CoordinatorOptions {
  return {
    env,
    tokenizer: tok,
    policies: {},
    learners: {},
    rollout: { maxTurns: 41, maxTokensPerTurn: 16, maxResponseTokens: 700, temperature: 1, contextLength: 1024, seed: 0, context: 'latest' },
    tasksPerStep: 2,
    groupSize: 2,
    seed: 5,
    ...overrides,
  };
}

describe('multi-agent coordinator', () => {
  test('barriers, turn order, zero-sum, independent weights', async () => {
    const events: CoordinatorEvent[] = [];
    const a = new ToyPolicy();
    const b = new ToyPolicy();
    const seenA: Sequence[][] = [];
    const seenB: Sequence[][] = [];
    // B trains slower than A: the barrier must still hold the next rollout until both are done.
    const coordinator = new MultiAgentCoordinator(
      options({ policies: { a: slot(a, 5, seenA), b: slot(b, 40, seenB) }, learners: { black: 'a', white: 'b' }, onEvent: (e) => events.push(e) }),
    );
    const reports = [await coordinator.runStep(), await coordinator.runStep()];

    for (const step of [0, 1]) {
      const at = (pred: (e: CoordinatorEvent) => boolean) => events.map((e, i) => (pred(e) ? i : -1)).filter((i) => i >= 0);
      const rolloutEnds = at((e) => e.type === 'rollout-end' && e.step === step);
      const updateStarts = at((e) => e.type === 'update-start' && e.step === step);
      const updateEnds = at((e) => e.type === 'update-end' && e.step === step);
      expect(rolloutEnds).toHaveLength(2);
      expect(updateStarts).toHaveLength(2);
      expect(Math.max(...rolloutEnds)).toBeLessThan(Math.min(...updateStarts));
      const nextRollout = at((e) => e.type === 'rollout-start' && e.step === step + 1);
      if (nextRollout.length > 0) expect(Math.max(...updateEnds)).toBeLessThan(nextRollout[0]);
    }

    for (const report of reports) {
      expect(report.rollouts).toHaveLength(4);
      for (const r of report.rollouts) {
        expect(r.endReason).toBe('terminated');
        expect(r.moves.map((m) => m.agent)).toEqual(r.moves.map((_, i) => (i % 2 === 0 ? 'black' : 'white')));
        expect(r.agents.black.totalReward + r.agents.white.totalReward).toBe(0);
      }
    }

    // Each policy learned from its own seat only: replaying its batches reproduces its weights.
    const replay = (batches: Sequence[][]) => {
      const w = new Float64Array(SIZE * SIZE);
      for (const batch of batches) for (const seq of batch) w[moveCell(seq)] += 0.1 * (seq.rewards as number);
      return w;
    };
    expect(seenA.flat().every((s) => tok.decode(s.tokens).includes('You are black'))).toBe(true);
    expect(seenB.flat().every((s) => tok.decode(s.tokens).includes('You are white'))).toBe(true);
    expect(a.weights).toEqual(replay(seenA));
    expect(b.weights).toEqual(replay(seenB));
    expect(a.weights).not.toEqual(b.weights);
  });

  test('a shared policy gets one update with both seats', async () => {
    const shared = new ToyPolicy();
    const seen: Sequence[][] = [];
    const events: CoordinatorEvent[] = [];
    const coordinator = new MultiAgentCoordinator(options({ policies: { p: slot(shared, 0, seen) }, learners: { black: 'p', white: 'p' }, onEvent: (e) => events.push(e) }));
    const report = await coordinator.runStep();
    const updates = events.filter((e) => e.type === 'update-start');
    expect(updates).toHaveLength(1);
    const moves = report.rollouts.reduce((n, r) => n + r.agents.black.turns + r.agents.white.turns, 0);
    expect(seen[0]).toHaveLength(moves);
  });

  test('deterministic with a seed', async () => {
    const run = async (seed: number) => {
      const p = new ToyPolicy();
      const c = new MultiAgentCoordinator(options({ seed, policies: { p: slot(p, 0, []) }, learners: { black: 'p' }, opponents: { scripted: 1, random: 1 } }));
      const reports = [await c.runStep(), await c.runStep()];
      return { moves: reports.flatMap((r) => r.rollouts.map((x) => x.moves.map((m) => m.text).join(' '))), opponents: reports.map((r) => r.opponents), weights: Array.from(p.weights) };
    };
    const first = await run(11);
    expect(await run(11)).toEqual(first);
    expect((await run(12)).moves).not.toEqual(first.moves);
  });

  test('opponents mix bots and a frozen snapshot that training does not move', async () => {
    const p = new ToyPolicy();
    const events: CoordinatorEvent[] = [];
    const c = new MultiAgentCoordinator(
      options({ policies: { p: slot(p, 0, []) }, learners: { black: 'p' }, opponents: { 'frozen:p': 1, random: 1 }, tasksPerStep: 4, refreshFrozenEvery: 100, onEvent: (e) => events.push(e) }),
    );
    const first = await c.runStep();
    const second = await c.runStep();
    const chosen = [...first.opponents, ...second.opponents].map((o) => o.white);
    expect(new Set(chosen)).toEqual(new Set(['frozen:p', 'random']));
    expect(events.filter((e) => e.type === 'snapshot')).toHaveLength(1);
    // The snapshot plays with the weights of step 0 (all zero): its moves are pure seeded noise,
    // while p has learned; white's sequences are never trained.
    expect(p.weights.some((w) => w !== 0)).toBe(true);
    for (const r of [...first.rollouts, ...second.rollouts]) {
      expect(r.agents.white.learn).toBe(false);
      expect(r.agents.black.totalReward + r.agents.white.totalReward).toBe(0);
    }
  });

  test('a pool of past snapshots: one every K steps, at most N kept, the dropped one released', async () => {
    const p = new ToyPolicy();
    const events: CoordinatorEvent[] = [];
    const released: Policy[] = [];
    const frozen: Policy[] = [];
    const s: PolicySlot = {
      ...slot(p, 0, []),
      freeze: async () => {
        frozen.push(new ToyPolicy(p.weights.slice()));
        return frozen.at(-1)!;
      },
      release: (policy) => released.push(policy),
    };
    const c = new MultiAgentCoordinator(
      options({ policies: { p: s }, learners: { black: 'p' }, opponents: { 'pool:p': 1 }, pool: { every: 2, size: 2, sampling: 'uniform' }, tasksPerStep: 4, onEvent: (e) => events.push(e) }),
    );
    const reports: StepReport[] = [];
    for (let step = 0; step < 6; step++) reports.push(await c.runStep());
    expect(events.filter((e) => e.type === 'snapshot').map((e) => [e.step, e.type === 'snapshot' ? e.pool : 0])).toEqual([[0, 1], [2, 2], [4, 2]]);
    expect(released).toEqual([frozen[0]]);
    const opponentsAt = (step: number) => new Set(reports[step].opponents.map((o) => o.white));
    expect(opponentsAt(0)).toEqual(new Set(['pool:p@0']));
    expect(opponentsAt(1)).toEqual(new Set(['pool:p@0']));
    expect(opponentsAt(3)).toEqual(new Set(['pool:p@0', 'pool:p@2']));
    expect(opponentsAt(5)).toEqual(new Set(['pool:p@2', 'pool:p@4']));
    for (const r of reports.flatMap((x) => x.rollouts)) expect(r.agents.white.learn).toBe(false);
  });

  test.each([
    ['uniform', [1, 1, 1, 1]],
    ['recency', [1, 2, 3, 4]],
  ] as const)('the pool draws its snapshots %s', (sampling, weights) => {
    const rng = new Rng(7);
    const counts = [0, 0, 0, 0];
    const draws = 20_000;
    for (let i = 0; i < draws; i++) counts[drawSnapshot(rng, 4, sampling)]++;
    const total = weights.reduce((a, b) => a + b, 0);
    // Binomial standard deviation at 20 000 draws is at most 0.0036: a margin of 0.02 is over 5 of them.
    counts.forEach((n, k) => expect(Math.abs(n / draws - weights[k] / total)).toBeLessThan(0.02));
  });

  test('misconfiguration is refused up front', () => {
    expect(() => new MultiAgentCoordinator(options({ policies: { p: { policy: new ToyPolicy() } }, learners: { black: 'p' }, opponents: { random: 1 } }))).toThrow(/needs a trainer/);
    expect(() => new MultiAgentCoordinator(options({ policies: { p: slot(new ToyPolicy(), 0, []) }, learners: { black: 'p' } }))).toThrow(/need an opponent mix/);
    expect(() => new MultiAgentCoordinator(options({ policies: { p: slot(new ToyPolicy(), 0, []) }, learners: { black: 'p' }, opponents: { minimax: 1 } }))).toThrow(/no bot "minimax"/);
    expect(() => new MultiAgentCoordinator(options({ policies: { p: { ...slot(new ToyPolicy(), 0, []), freeze: undefined } }, learners: { black: 'p' }, opponents: { 'pool:p': 1 } }))).toThrow(/cannot be frozen/);
    expect(() => new MultiAgentCoordinator(options({ policies: { p: slot(new ToyPolicy(), 0, []) }, learners: { black: 'p' }, opponents: { 'league:p': 1 } }))).toThrow(/pool:<id>/);
  });
});
