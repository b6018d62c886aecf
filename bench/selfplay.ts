/**
 * Self-play of two independently learning agents on the gomoku template (9 × 9, five in a row, the
 * template's defaults): black and white are separate GPT policies with GRPO optimisers of their
 * own, driven by the coordinator as a TRAIN job's are. bench/agents.ts reports the largest
 * |reward_black + reward_white| over every game and every step's means (zero-sum: 0) and both
 * agents' mean reward per step (one rises as the other falls).
 */
import { GRPOTrainer } from '../gpu-worker/engine/grpo';
import { GPT } from '../gpu-worker/engine/model';
import { initBackend } from '../gpu-worker/engine/backend';
import { CharTokenizer } from '../gpu-worker/engine/tokenizer';
import { MultiAgentCoordinator } from '../gpu-worker/runtime/coordinator';
import { engineTrainer, modelPolicy } from '../gpu-worker/runtime/engine-policy';
import { SandboxEnvironment } from '../gpu-worker/runtime/sandbox/sandbox-environment';
import { loadTemplate } from '../env-templates/load-template';

export interface SelfPlayResult {
  maxAbs: number;
  steps: number;
  games: number;
  blackCurve: number[];
  whiteCurve: number[];
  seconds: number;
}

export async function selfPlayZeroSum(steps = 20): Promise<SelfPlayResult> {
  await initBackend();
  const started = performance.now();
  const template = loadTemplate('gomoku');
  const loaded = await SandboxEnvironment.load({ files: template.source.files, entry: template.source.entry });
  if (!loaded.ok) throw new Error(`gomoku does not compile: ${JSON.stringify(loaded.errors)}`);
  const env = loaded.env;
  const tok = new CharTokenizer();
  const contextLength = 192;
  const agents = ['black', 'white'] as const;
  const models = agents.map((_, i) => new GPT({ vocabSize: tok.vocabSize, contextLength, layers: 2, width: 64, heads: 4, seed: 11 + i }));
  const trainers = models.map((m, i) => new GRPOTrainer(m, { learningRate: 1e-3, seed: 21 + i, miniBatches: 4 }));
  try {
    const coordinator = new MultiAgentCoordinator({
      env,
      tokenizer: tok,
      policies: Object.fromEntries(agents.map((a, i) => [a, { policy: modelPolicy(models[i], tok), trainer: engineTrainer(trainers[i]) }])),
      learners: { black: 'black', white: 'white' },
      rollout: { maxTurns: 41, maxTokensPerTurn: 24, maxResponseTokens: 1000, temperature: 1, contextLength, seed: 0 },
      tasksPerStep: 4,
      groupSize: 4,
      seed: 5,
    });
    let maxAbs = 0;
    let games = 0;
    const blackCurve: number[] = [];
    const whiteCurve: number[] = [];
    for (let s = 0; s < steps; s++) {
      const report = await coordinator.runStep();
      for (const r of report.rollouts) {
        if (r.endReason === 'error') continue;
        games++;
        maxAbs = Math.max(maxAbs, Math.abs(r.agents.black.totalReward + r.agents.white.totalReward));
      }
      maxAbs = Math.max(maxAbs, Math.abs(report.meanReward.black + report.meanReward.white));
      blackCurve.push(Number(report.meanReward.black.toFixed(3)));
      whiteCurve.push(Number(report.meanReward.white.toFixed(3)));
    }
    return { maxAbs, steps, games, blackCurve, whiteCurve, seconds: Number(((performance.now() - started) / 1000).toFixed(1)) };
  } finally {
    trainers.forEach((t) => t.dispose());
    models.forEach((m) => m.dispose());
    await env.dispose();
  }
}
