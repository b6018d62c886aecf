/**
 * The learning policies of a TRAIN job, as the coordinator takes them (PolicySlot): one policy
 * that every learner shares (the default), or one per learner with an optimiser of its own
 * (training.independentLearners), all starting from the run's initial model. Each slot makes and
 * frees its own frozen copies (`frozen:` and `pool:` opponents).
 *
 * A run of independent learners writes one checkpoint per learner at each step (the note's and
 * the upload's `agent`), and a resumed attempt restores every learner from its own checkpoint of
 * the step resumed from (the assignment's `resumeFrom.agents`).
 */
import { GRPOTrainer } from '../engine/grpo';
import { type LanguageModel } from '../engine/model';
import { PPOTrainer } from '../engine/ppo';
import { type Tokenizer } from '../engine/tokenizer';
import { type TrainerState } from '../engine/trainer-core';
import { type PolicySlot } from '../runtime/coordinator';
import { engineTrainer, modelPolicy } from '../runtime/engine-policy';
import { type Policy } from '../runtime/policy';
import { grpoOptionsSchema, pickOptions, ppoOptionsSchema, type TrainingConfig } from '../../sdk/training-config';
import { type Assignment } from '../../sdk/worker-protocol';
import { type CheckpointStore } from './checkpoints';
import { type Emitter } from './emit';
import { JobFailure } from './types';

type RLConfig = Exclude<TrainingConfig, { algorithm: 'sft' }>;

/** The policy id of the one policy that learners share. */
const SHARED_POLICY = 'policy';

export interface Learner {
  /** The coordinator's policy id: SHARED_POLICY, or the agent's name. */
  id: string;
  /** The agent whose policy this is (independent learners only): its checkpoints carry it. */
  agent?: string;
  model: LanguageModel;
  trainer: GRPOTrainer | PPOTrainer;
  slot: PolicySlot;
  /** Frees the trainer, the frozen copies, and the model where this learner made it. */
  dispose(): void;
}

/**
 * A learner over `model`: its trainer (with a resumed run's state and the KL reference its
 * checkpoint kept: the policy as training began, not as it is at the resume), and a slot whose
 * frozen copies it frees. `ownsModel`: the learner made (or loaded) the model and disposes of it,
 * and of its reference.
 */
function learner(id: string, agent: string | undefined, model: LanguageModel, ownsModel: boolean, tok: Tokenizer, training: RLConfig, state: TrainerState | null, reference: LanguageModel | null = null): Learner {
  // The engine's configs are the resolved options themselves (the same names): only selected.
  const trainer =
    training.algorithm === 'ppo' ? new PPOTrainer(model, pickOptions(ppoOptionsSchema, training), reference ?? undefined) : new GRPOTrainer(model, pickOptions(grpoOptionsSchema, training), reference ?? undefined);
  if (state) {
    if (state.algorithm !== training.algorithm) {
      trainer.dispose();
      throw new JobFailure(`checkpoint was trained with ${state.algorithm}, this job uses ${training.algorithm}`);
    }
    trainer.importState(state);
  }
  const frozen = new Map<Policy, LanguageModel>();
  const slot: PolicySlot = {
    policy: modelPolicy(model, tok),
    trainer: engineTrainer(trainer),
    freeze: async () => {
      const copy = model.frozenCopy();
      const p = modelPolicy(copy, tok);
      frozen.set(p, copy);
      return p;
    },
    release: (p) => {
      frozen.get(p)?.dispose();
      frozen.delete(p);
    },
  };
  return {
    id, agent, model, trainer, slot,
    dispose: () => {
      frozen.forEach((m) => m.dispose());
      trainer.dispose();
      if (ownsModel) {
        model.dispose();
        reference?.dispose();
      }
    },
  };
}

export interface LearnersRequest {
  assignment: Assignment;
  store: CheckpointStore;
  emit: Emitter;
  training: RLConfig;
  /** The agents that learn (training.learners, or the first agent). */
  agents: readonly string[];
  /** The run's policy as loaded (and warm-started): the shared policy, or what independent learners copy. */
  model: LanguageModel;
  tokenizer: Tokenizer;
  /** The trainer state to continue: a resumed checkpoint's, unless its warm start ran (then none). */
  resumed: { trainerState: TrainerState | null; reference: LanguageModel | null; step: number } | null;
}

/** The run's learners, in `agents`' order (the first is the run's: evaluated, and its checkpoint newest). */
export async function makeLearners(r: LearnersRequest): Promise<Learner[]> {
  if (!r.training.independentLearners) return [learner(SHARED_POLICY, undefined, r.model, false, r.tokenizer, r.training, r.resumed?.trainerState ?? null, r.resumed?.reference)];
  const made: Learner[] = [];
  try {
    for (const agent of r.agents) {
      if (!r.resumed) {
        // A trainable copy: frozenCopy's variables are ordinary ones, and no other optimiser holds them.
        made.push(learner(agent, agent, r.model.frozenCopy(), true, r.tokenizer, r.training, null));
        continue;
      }
      const own = await resumedLearner(r, agent, r.resumed.step);
      made.push(learner(agent, agent, own.model, true, r.tokenizer, r.training, own.trainerState, own.reference));
    }
    r.emit.log('info', `independent learners: ${r.agents.join(', ')}, each with a policy and an optimiser of its own`);
    return made;
  } catch (e) {
    made.forEach((l) => l.dispose());
    throw e;
  }
}

/** A learner's own checkpoint at the step resumed from (the assignment's `resumeFrom.agents`). */
async function resumedLearner(r: LearnersRequest, agent: string, step: number): Promise<{ model: LanguageModel; trainerState: TrainerState; reference: LanguageModel | null }> {
  const own = r.assignment.resumeFrom?.agents?.[agent];
  if (!own) {
    throw new JobFailure(
      `cannot resume learner "${agent}": the checkpoint resumed from (${r.assignment.resumeFrom?.checkpointId}) has no checkpoint of its own for it at step ${step}, so its policy would be lost`,
    );
  }
  const ckpt = await r.store.load(own.storageKey);
  const at = ckpt.note?.step;
  if (ckpt.kind !== 'training' || !ckpt.trainerState || at !== step || ckpt.note?.agent !== agent) {
    ckpt.model.dispose();
    ckpt.reference?.dispose();
    throw new JobFailure(`checkpoint ${own.checkpointId} is not learner "${agent}"'s training checkpoint after step ${step}`);
  }
  r.emit.log('info', `learner ${agent} resumed from checkpoint ${own.checkpointId} after step ${step}`);
  return { model: ckpt.model, trainerState: ckpt.trainerState, reference: ckpt.reference };
}
