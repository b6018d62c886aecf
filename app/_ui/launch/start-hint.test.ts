import { describe, expect, it } from 'vitest';
import { checkpointStartHint } from './start-hint';

describe("the launcher's hint for a checkpoint to start from", () => {
  const lora = { rank: 8, alpha: 16, targets: ['attn', 'mlp'] };
  it('says what the checkpoint holds: adapters on an imported model, every weight, or the engine’s own model', () => {
    expect(checkpointStartHint({ architecture: 'pretrained', lora, model: { id: 'm1', name: 'smollm2' }, shape: null, allWeights: false })).toBe(
      "LoRA adapters (rank 8, alpha 16 on attn, mlp) on imported model smollm2, which stays frozen: this run keeps training the adapters, through the model's chat template.",
    );
    expect(checkpointStartHint({ architecture: 'pretrained', lora, model: { id: 'm1', name: 'smollm2' }, shape: null, allWeights: true })).toMatch(/on a full fine-tune of imported model smollm2, which stays frozen/);
    expect(checkpointStartHint({ architecture: 'pretrained', lora: null, model: { id: 'm1', name: 'smollm2' }, shape: null, allWeights: true })).toBe(
      'Every weight of imported model smollm2, fine-tuned: this run trains every weight unless lora below adds adapters.',
    );
    expect(checkpointStartHint({ architecture: 'pretrained', lora, model: { id: 'm1', name: null }, shape: null, allWeights: false })).toMatch(/imported model m1, which has been removed from the team/);
    const shape = { layers: 2, width: 64, heads: 4, contextLength: 256 };
    expect(checkpointStartHint({ architecture: 'gpt', lora: null, model: null, shape, allWeights: true })).toBe(
      "Every weight of the engine's own model (2 layers, width 64, context 256): this run trains every weight unless lora below adds adapters.",
    );
    expect(checkpointStartHint({ architecture: 'gpt', lora, model: null, shape, allWeights: true })).toMatch(/^LoRA adapters \(rank 8.*on the engine's own model \(2 layers.*keeps training the adapters\.$/);
  });
});
