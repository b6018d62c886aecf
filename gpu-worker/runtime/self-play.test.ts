/**
 * Self-play with two independently learning agents on the real path: the gomoku template in the
 * sandbox, two GPT policies (black and white, each with its own weights and GRPO optimiser), the
 * coordinator's barriers, legal-move masking. Zero-sum is asserted at every step, per game and in
 * the step's mean rewards: whatever one agent gains the other loses.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { GRPOTrainer } from '../engine/grpo';
import { GPT } from '../engine/model';
import { CharTokenizer } from '../engine/tokenizer';
import { testBackend } from '../test-support/engine/test-setup';
import { loadTemplate } from '../../env-templates/load-template';
import { openInSandbox } from '../../env-templates/test-support/template-harness';
import { MultiAgentCoordinator } from './coordinator';
import { engineTrainer, modelPolicy } from './engine-policy';
import { type SandboxEnvironment } from './sandbox/sandbox-environment';

const SMALL = "import { createGomoku } from './env';\nexport default createGomoku({ size: 5, winLength: 3 });\n";
let env: SandboxEnvironment;
beforeAll(async () => {
  await testBackend();
  env = await openInSandbox(loadTemplate('gomoku'), { 'small.ts': SMALL }, 'small.ts');
});
afterAll(() => env.dispose());

function snapshot(model: GPT): Float32Array[] {
  return [...model.trainableVariables().values()].map((v) => v.dataSync().slice() as Float32Array);
}

test('two independently learning agents: rewards sum to zero at every step, each policy moves on its own', { timeout: 300_000 }, async () => {
  const tok = new CharTokenizer();
  const make = (seed: number) => new GPT({ vocabSize: tok.vocabSize, contextLength: 128, layers: 1, width: 32, heads: 2, seed });
  const black = make(1);
  const white = make(2);
  const before = { black: snapshot(black), white: snapshot(white) };
  const trainers = { black: new GRPOTrainer(black, { learningRate: 1e-3, seed: 3 }), white: new GRPOTrainer(white, { learningRate: 1e-3, seed: 4 }) };
  const coordinator = new MultiAgentCoordinator({
    env,
    tokenizer: tok,
    policies: {
      black: { policy: modelPolicy(black, tok), trainer: engineTrainer(trainers.black) },
      white: { policy: modelPolicy(white, tok), trainer: engineTrainer(trainers.white) },
    },
    learners: { black: 'black', white: 'white' },
    rollout: { maxTurns: 13, maxTokensPerTurn: 16, maxResponseTokens: 13 * 16, temperature: 1, contextLength: 128, seed: 0 },
    tasksPerStep: 2,
    groupSize: 4,
    seed: 9,
  });

  const sums: number[] = [];
  const trained = new Set<string>();
  for (let step = 0; step < 3; step++) {
    const report = await coordinator.runStep();
    expect(report.rollouts).toHaveLength(8);
    for (const r of report.rollouts) {
      expect(r.endReason).toBe('terminated');
      // Masking: every move was legal, so each game ended on the board (a win or a full board).
      expect(r.moves.every((m) => m.legal === true)).toBe(true);
      expect(['black', 'white', 'draw']).toContain(r.finalInfo.result);
      sums.push(r.agents.black.totalReward + r.agents.white.totalReward);
    }
    sums.push(report.meanReward.black + report.meanReward.white);
    for (const id of Object.keys(report.metrics)) trained.add(id);
  }
  expect(Math.max(...sums.map(Math.abs))).toBe(0);
  // Both learned, each from its own games only, into weights of its own.
  expect([...trained].sort()).toEqual(['black', 'white']);
  const moved = (m: GPT, was: Float32Array[]) => snapshot(m).some((w, i) => w.some((x, j) => x !== was[i][j]));
  expect(moved(black, before.black)).toBe(true);
  expect(moved(white, before.white)).toBe(true);
  trainers.black.dispose();
  trainers.white.dispose();
  black.dispose();
  white.dispose();
});
