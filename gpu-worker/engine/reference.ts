/**
 * The frozen KL reference of a trainer (GRPO and PPO with klCoef > 0): the policy as it stood
 * when training began, never updated.
 *
 * Fully fine-tuned, that is a copy of every weight (`frozenCopy`). Under LoRA the base weights
 * never change while training, so the reference is the policy's own base with a frozen copy of its
 * adapters at the start: its base variables share the policy's buffers (a tfjs variable made from
 * a tensor shares its data, and `assign` swaps in new data rather than writing over it, so neither
 * model ever sees the other's updates), and a training checkpoint holds only the reference's
 * adapters, to be put back on the loaded policy's base (checkpoint.ts) — not a second f32 copy of
 * the model.
 */
import { attachAdapterCopies, attachLora, type LoraConfig, loraConfigOf } from './lora';
import { GPT, type LanguageModel } from './model';
import { PretrainedDecoder } from './pretrained/decoder';

/** The model's weights without its adapters, sharing their buffers (see above). */
function sharedBase(model: LanguageModel): LanguageModel {
  if (model instanceof GPT) return new GPT(model.config, model.params);
  if (model instanceof PretrainedDecoder) return new PretrainedDecoder(model.config, model.params, { valueHead: model.hasValueHead, base: model.base, contextLength: model.contextLength });
  throw new Error('a KL reference is made of a GPT or a pretrained decoder');
}

/** The reference of a trainer about to train `model`: its frozen copy, or under LoRA its base with its adapters as they are now. */
export function frozenReference(model: LanguageModel): LanguageModel {
  const lora = loraConfigOf(model);
  if (model.adapters.size === 0 || !lora) return model.frozenCopy();
  const ref = sharedBase(model);
  attachAdapterCopies(ref, lora, model.adapters);
  return ref;
}

/** The LoRA config of a reference that is a base with adapters (its checkpoint holds those alone); null for a full copy. */
export function referenceLora(reference: LanguageModel): LoraConfig | null {
  return reference.adapters.size > 0 ? loraConfigOf(reference) : null;
}

/** A reference saved as adapters (keyed "lora.<linear>.a|b"), put back on the base of `policy` as loaded from the same checkpoint. */
export function referenceOnBase(policy: LanguageModel, lora: LoraConfig, adapters: Map<string, Float32Array>): LanguageModel {
  const ref = sharedBase(policy);
  try {
    attachLora(ref, lora, adapters);
  } catch (err) {
    ref.dispose();
    throw err;
  }
  return ref;
}
