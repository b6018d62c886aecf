import type { CheckpointContents } from '../../../server/runs/checkpoint-contents';

/**
 * The launcher's hint for a checkpoint to start from: what it holds (read from its header by
 * runs.checkpointContents), and so what the run trains. A run keeps the adapters it finds.
 */
export function checkpointStartHint(c: CheckpointContents): string {
  const adapters = c.lora ? `LoRA adapters (rank ${c.lora.rank}, alpha ${c.lora.alpha} on ${c.lora.targets.join(', ')})` : null;
  if (c.architecture === 'pretrained') {
    if (c.model && c.model.name === null) return `A checkpoint of imported model ${c.model.id}, which has been removed from the team: import it again to start from this checkpoint.`;
    const model = c.model ? `imported model ${c.model.name}` : 'an imported model';
    return adapters
      ? `${adapters} on ${c.allWeights ? `a full fine-tune of ${model}` : model}, which stays frozen: this run keeps training the adapters, through the model's chat template.`
      : `Every weight of ${model}, fine-tuned: this run trains every weight unless lora below adds adapters.`;
  }
  const shape = c.shape ? `the engine's own model (${c.shape.layers} layers, width ${c.shape.width}, context ${c.shape.contextLength})` : "the engine's own model";
  return adapters ? `${adapters} on ${shape}: this run keeps training the adapters.` : `Every weight of ${shape}: this run trains every weight unless lora below adds adapters.`;
}
