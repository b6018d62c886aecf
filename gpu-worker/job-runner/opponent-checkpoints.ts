/**
 * Saved checkpoints as frozen opponents of a TRAIN job: the opponent mix's "checkpoint:<id>"
 * entries (sdk/training-config.ts). The server checked each is the team's and put its storage key
 * in the assignment's blobKeys; here each is fetched and loaded once, checked to read the prompts
 * the rollouts write (the policy's own tokenizer, a context at least the policy's), and becomes a
 * policy named "checkpoint:<id>" that never learns, which the recorded matches name.
 */
import { type LanguageModel } from '../engine/model';
import { type Tokenizer } from '../engine/tokenizer';
import { type PolicySlot } from '../runtime/coordinator';
import { modelPolicy } from '../runtime/engine-policy';
import { OPPONENT_CHECKPOINT } from '../../sdk/training-config';
import { type Assignment } from '../../sdk/worker-protocol';
import { type CheckpointStore } from './checkpoints';
import { type Emitter } from './emit';
import { blobKey } from './load-policy';
import { JobFailure } from './types';

export interface OpponentCheckpoints {
  /** Policy slots by opponent name ("checkpoint:<id>"). */
  slots: Record<string, PolicySlot>;
  /** The loaded models, for the job to dispose. */
  models: LanguageModel[];
}

export async function loadOpponentCheckpoints(
  assignment: Assignment,
  store: CheckpointStore,
  emit: Emitter,
  opponents: Record<string, number> | undefined,
  policy: { tokenizer: Tokenizer; contextLength: number },
): Promise<OpponentCheckpoints> {
  const out: OpponentCheckpoints = { slots: {}, models: [] };
  try {
    for (const name of Object.keys(opponents ?? {}).filter((n) => n.startsWith(OPPONENT_CHECKPOINT))) {
      const id = name.slice(OPPONENT_CHECKPOINT.length);
      const ckpt = await store.load(blobKey(assignment, id, 'opponent checkpoint'));
      ckpt.reference?.dispose();
      out.models.push(ckpt.model);
      const theirs = JSON.stringify(ckpt.tokenizer.toJSON());
      if (theirs !== JSON.stringify(policy.tokenizer.toJSON())) {
        throw new JobFailure(`opponent "${name}" uses another tokenizer (${theirs.slice(0, 120)}) than the policy: train against a checkpoint of a run with the same tokenizer`);
      }
      if (ckpt.model.contextLength < policy.contextLength) {
        throw new JobFailure(
          `opponent "${name}" has a context of ${ckpt.model.contextLength} tokens, shorter than the policy's ${policy.contextLength}: the rollouts would write prompts it cannot read (set training.model.contextLength to at most ${ckpt.model.contextLength}, or choose another checkpoint)`,
        );
      }
      out.slots[name] = { policy: modelPolicy(ckpt.model, ckpt.tokenizer) };
      emit.log('info', `opponent ${name}: ${ckpt.model.numParameters} parameters, frozen`);
    }
  } catch (e) {
    out.models.forEach((m) => m.dispose());
    throw e;
  }
  return out;
}
