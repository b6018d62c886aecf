/**
 * End to end, bounded and seeded: the bandit template in the sandbox, the rollout state machine,
 * the engine's sampler and GRPO trainer. A short SFT teaches the answer format (a letter, uniformly
 * chosen: reward ~0.25); GRPO then has to find the hidden colour → arm rule. This is the issue's
 * "GRPO on bandit raises reward" check.
 */
import { beforeAll, describe, expect, test } from 'vitest';
import { GPT } from '../engine/model';
import { GRPOTrainer } from '../engine/grpo';
import { Rng } from '../engine/rng';
import { SFTTrainer } from '../engine/sft';
import { testBackend } from '../test-support/engine/test-setup';
import { CharTokenizer, encodeChat } from '../engine/tokenizer';
import { loadTemplate } from '../../env-templates/load-template';
import { openInSandbox } from '../../env-templates/test-support/template-harness';
import { MultiAgentCoordinator } from './coordinator';
import { engineTrainer, modelPolicy } from './engine-policy';
import { type EpisodeSpec, runRollouts } from './rollout';

beforeAll(async () => {
  await testBackend();
});

describe('learning through the runtime', () => {
  test('GRPO on bandit raises the reward', async () => {
    const template = loadTemplate('bandit');
    const env = await openInSandbox(template);
    const tok = new CharTokenizer();
    const model = new GPT({ vocabSize: tok.vocabSize, contextLength: 72, layers: 2, width: 32, heads: 4, seed: 3 });
    const limits = { ...template.manifest.limits, contextLength: 72, temperature: 1 };

    // SFT on the format only: every colour with a random arm.
    const sft = new SFTTrainer(model, { learningRate: 3e-3, warmupSteps: 5 });
    const rng = new Rng(4);
    const system = 'Answer with one letter: A, B, C or D.';
    for (let s = 0; s < 60; s++) {
      sft.step(
        Array.from({ length: 32 }, () => {
          const colour = ['red', 'green', 'blue', 'yellow'][rng.int(4)];
          const prompt = encodeChat(tok, [{ role: 'system', content: system }, { role: 'user', content: `colour: ${colour}\narm:` }]);
          const answer = [...tok.encode('ABCD'[rng.int(4)]), tok.eos];
          return { tokens: [...prompt, ...answer], lossMask: [...prompt.map(() => 0), ...answer.map(() => 1)] };
        }),
      );
    }
    sft.dispose();

    const policy = modelPolicy(model, tok);
    const evaluate = async (seed: number) => {
      const specs: EpisodeSpec[] = Array.from({ length: 128 }, (_, i) => ({
        episodeId: `eval-${seed}-${i}`,
        group: 'eval',
        seed: seed + i,
        taskSeed: seed + i,
        players: { agent: { kind: 'policy', policy: 'gpt', learn: false } },
      }));
      const rollouts = await runRollouts(env, tok, { gpt: policy }, specs, { ...limits, seed });
      return rollouts.reduce((a, r) => a + r.agents.agent.totalReward, 0) / rollouts.length;
    };
    const before = await evaluate(1000);

    const grpo = new GRPOTrainer(model, { learningRate: 3e-3, seed: 5 });
    const coordinator = new MultiAgentCoordinator({
      env,
      tokenizer: tok,
      policies: { gpt: { policy, trainer: engineTrainer(grpo) } },
      learners: { agent: 'gpt' },
      rollout: { ...limits, seed: 0 },
      tasksPerStep: 8,
      groupSize: 8,
      seed: 6,
    });
    // About 30 s on one wasm core: the smallest run that learns the rule reliably.
    for (let step = 0; step < 60; step++) await coordinator.runStep();
    grpo.dispose();
    const after = await evaluate(2000);

    expect(before).toBeLessThan(0.45);
    expect(after).toBeGreaterThan(before + 0.25);
    await env.dispose();
    model.dispose();
  });
});
