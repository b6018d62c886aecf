/**
 * A TRAIN job (GRPO or PPO on an environment version), top to bottom:
 *
 *   config + manifest → environment in the sandbox → policy (resumed, from a base, or new) →
 *   for each step: [preempt? checkpoint and stop] rollout phase + update phase (the coordinator),
 *   metrics, samples, matches and boards, logs; a training checkpoint every `checkpointEvery`
 *   steps → at the end a training and a sampler checkpoint.
 *
 * Steps are numbered from 0; "step N" in a checkpoint means N steps were completed, so a job that
 * resumes from it runs step N next. Everything random is seeded from (seed, step), and the
 * trainer's RNG and optimiser come back from the checkpoint, so a resumed run continues exactly
 * as the uninterrupted one would have.
 */
import { GRPOTrainer } from '../engine/grpo';
import { GPT, frozenCopy } from '../engine/model';
import { PPOTrainer } from '../engine/ppo';
import { CharTokenizer, type Tokenizer } from '../engine/tokenizer';
import { MultiAgentCoordinator, type PolicySlot, type StepReport } from '../runtime/coordinator';
import { engineTrainer, modelPolicy } from '../runtime/engine-policy';
import { SandboxEnvironment } from '../runtime/sandbox/sandbox-environment';
import { type Json } from '../../sdk/environment/schema';
import { trainJobConfigSchema } from '../../sdk/job-config';
import { manifestSchema, trainingDefaultsSchema, type Manifest, type TrainingDefaults } from '../../sdk/manifest';
import { type Assignment } from '../../sdk/worker-protocol';
import { CheckpointStore } from './checkpoints';
import { boardItems, Emitter, matchItem, rolloutItems } from './emit';
import { type JobControl, type JobSink } from './sink';
import { type JobResult, JobFailure, type RunOptions } from './types';
import { failed, finishTraining, stopBeforeStep } from './lifecycle';

const POLICY = 'policy';

export async function runTrain(assignment: Assignment, sink: JobSink, control: JobControl, options: RunOptions = {}): Promise<JobResult> {
  const emit = new Emitter(sink);
  const store = new CheckpointStore(sink);
  let env: SandboxEnvironment | null = null;
  const disposables: { dispose(): void }[] = [];
  try {
    const config = trainJobConfigSchema.parse(assignment.config);
    if (!assignment.environment) throw new JobFailure('a TRAIN job needs an environment version');
    const manifest = manifestSchema.parse(assignment.environment.manifest);
    const training = mergeTraining(manifest, assignment.config.training);
    if (training.algorithm === 'sft') throw new JobFailure('algorithm "sft" trains on a dataset: submit an SFT job');
    emit.log('info', `job ${assignment.jobId} attempt ${assignment.attempt}: ${training.algorithm} on ${manifest.name}@${manifest.version}, ${training.steps} steps`);

    // The environment, with its console going to the job's log.
    const loaded = await SandboxEnvironment.load(
      { files: assignment.environment.files, entry: assignment.environment.entry },
      { onLogs: (lines, episodeId) => lines.forEach((l) => emit.log('info', `[env${episodeId ? ` ${episodeId}` : ''}] ${l}`)) },
    );
    if (!loaded.ok) throw new JobFailure(`the environment does not compile: ${loaded.errors.map((e) => `${e.location ? `${e.location.file}:${e.location.line}: ` : ''}${e.message}`).join('; ')}`);
    env = loaded.env;

    const rows = manifest.dataset ? await datasetRows(assignment, config.datasetVersionId, sink) : undefined;

    // The policy: resumed (weights, optimiser, RNG, step), from a base checkpoint, or new.
    let model: GPT;
    let tok: Tokenizer;
    let startStep = 0;
    let trainerState = null;
    if (assignment.resumeFrom) {
      const ckpt = await store.load(assignment.resumeFrom.storageKey);
      if (ckpt.kind !== 'training' || !ckpt.trainerState) throw new JobFailure(`checkpoint ${assignment.resumeFrom.checkpointId} is not a training checkpoint`);
      model = ckpt.model;
      tok = ckpt.tokenizer;
      trainerState = ckpt.trainerState;
      startStep = ckpt.note?.step ?? assignment.resumeFrom.step;
      emit.log('info', `resumed from checkpoint ${assignment.resumeFrom.checkpointId} at step ${startStep}`);
    } else if (config.baseCheckpointId) {
      const key = assignment.blobKeys?.[config.baseCheckpointId];
      if (!key) throw new JobFailure(`the assignment has no storage key for base checkpoint ${config.baseCheckpointId}`);
      const ckpt = await store.load(key);
      model = ckpt.model;
      tok = ckpt.tokenizer;
      emit.log('info', `starting from checkpoint ${config.baseCheckpointId} (${model.numParameters} parameters)`);
    } else {
      tok = new CharTokenizer();
      const m = config.model;
      model = new GPT({
        vocabSize: tok.vocabSize,
        contextLength: m.context,
        layers: m.layers,
        width: m.width,
        heads: m.heads,
        valueHead: training.algorithm === 'ppo',
        seed: training.seed,
      });
      emit.log('info', `new policy: ${m.layers} layers, width ${m.width}, ${m.heads} heads, context ${m.context} (${model.numParameters} parameters)`);
    }
    disposables.push(model);

    const trainer = training.algorithm === 'ppo' ? new PPOTrainer(model, ppoConfig(training)) : new GRPOTrainer(model, grpoConfig(training));
    disposables.push(trainer);
    if (trainerState) {
      if (trainerState.algorithm !== training.algorithm) throw new JobFailure(`checkpoint was trained with ${trainerState.algorithm}, this job uses ${training.algorithm}`);
      trainer.importState(trainerState);
    }

    // Seats: the learners share one policy; the manifest's opponent mix fills the other seats.
    const agents = env.description.agents;
    const learnerAgents = training.learners ?? [agents[0]];
    let frozen: GPT | null = null;
    const slot: PolicySlot = {
      policy: modelPolicy(model, tok),
      trainer: engineTrainer(trainer),
      freeze: async () => {
        frozen?.dispose();
        frozen = frozenCopy(model);
        return modelPolicy(frozen, tok);
      },
    };
    disposables.push({ dispose: () => frozen?.dispose() });
    const multiAgent = agents.length > 1;
    const coordinator = new MultiAgentCoordinator({
      env,
      tokenizer: tok,
      policies: { [POLICY]: slot },
      learners: Object.fromEntries(learnerAgents.map((a) => [a, POLICY])),
      opponents: multiAgent ? training.opponents : undefined,
      rollout: {
        maxTurns: manifest.limits.maxTurns,
        maxTokensPerTurn: manifest.limits.maxTokensPerTurn,
        maxResponseTokens: manifest.limits.maxResponseTokens,
        temperature: training.temperature,
        contextLength: model.config.contextLength,
        seed: training.seed,
      },
      tasksPerStep: training.batchSize,
      groupSize: training.groupSize,
      rows,
      seed: training.seed,
    });
    if (startStep > 0) await startCoordinatorAt(coordinator, startStep, training.batchSize);

    const note = (step: number) => ({ step, jobId: assignment.jobId, attempt: assignment.attempt });
    let lastTrainingCheckpoint = assignment.resumeFrom ? startStep : -1;
    const checkpoint = async (step: number) => {
      if (lastTrainingCheckpoint === step) return;
      const up = await store.uploadTraining(model, tok, trainer, note(step));
      lastTrainingCheckpoint = step;
      emit.log('info', `training checkpoint at step ${step}: ${up.checkpointId}`);
    };
    const samples = options.samplesPerStep ?? 4;
    const matchesPerStep = options.matchesPerStep ?? 2;

    for (let step = startStep; step < training.steps; step++) {
      const interrupted = await stopBeforeStep(emit, control, step, checkpoint);
      if (interrupted) return interrupted;
      const started = performance.now();
      const report = await coordinator.runStep();
      if (report.step !== step) throw new Error(`the coordinator ran step ${report.step}, expected ${step}`);
      const seconds = (performance.now() - started) / 1000;
      await emitStep(emit, tok, report, seconds, { samples, matches: multiAgent ? matchesPerStep : 0 });
      await emit.flushLogs();
      const done = step + 1;
      if (done % training.checkpointEvery === 0 && done < training.steps) await checkpoint(done);
      options.onStep?.(step);
    }
    return await finishTraining(emit, store, checkpoint, model, tok, training.steps);
  } catch (e) {
    return await failed(emit, e);
  } finally {
    for (const d of disposables.reverse()) d.dispose();
    await env?.dispose();
    store.dispose();
  }
}

/** The manifest's training defaults, overridden by the fields the job's config gives. */
export function mergeTraining(manifest: Manifest, raw: unknown): TrainingDefaults {
  const given = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  return trainingDefaultsSchema.parse({ ...manifest.training, ...given });
}

function grpoConfig(t: TrainingDefaults) {
  return {
    learningRate: t.learningRate,
    totalSteps: 0,
    clipLow: t.clip.low,
    clipHigh: t.clip.high,
    klCoef: t.kl.estimator === 'none' ? 0 : t.kl.coefficient,
    klEstimator: t.kl.estimator === 'k1' ? ('k1' as const) : ('k3' as const),
    normalizeByStd: t.normalizeAdvantageStd,
    // seq-mean-token-sum is seq-sum-norm with a constant of 1: the sum of token losses, averaged over sequences.
    aggregation: t.lossAggregation === 'seq-mean-token-sum' ? ('seq-sum-norm' as const) : t.lossAggregation,
    normConstant: t.lossAggregation === 'seq-mean-token-sum' ? 1 : 0,
    temperature: t.temperature,
    seed: t.seed,
  };
}

function ppoConfig(t: TrainingDefaults) {
  return {
    learningRate: t.learningRate,
    clipLow: t.clip.low,
    clipHigh: t.clip.high,
    klCoef: t.kl.estimator === 'none' ? 0 : t.kl.coefficient,
    klEstimator: t.kl.estimator === 'k1' ? ('k1' as const) : ('k3' as const),
    temperature: t.temperature,
    seed: t.seed,
  };
}

/**
 * Starts the coordinator at a resumed step. The coordinator numbers its steps from 0 and seeds
 * each step's tasks and sampling from (seed, step), and cycles dataset rows one per task; this
 * sets both counters and takes the opponent snapshots its first step would have taken.
 * TODO(runtime): replace with a `startStep` option of MultiAgentCoordinator.
 */
async function startCoordinatorAt(coordinator: MultiAgentCoordinator, step: number, tasksPerStep: number): Promise<void> {
  const inner = coordinator as unknown as { step: unknown; rowCursor: unknown; refreshSnapshots?: (step: number) => Promise<void> };
  if (typeof inner.step !== 'number' || typeof inner.rowCursor !== 'number' || typeof inner.refreshSnapshots !== 'function') {
    throw new Error('cannot resume: MultiAgentCoordinator no longer has step/rowCursor/refreshSnapshots');
  }
  inner.step = step;
  inner.rowCursor = step * tasksPerStep;
  await inner.refreshSnapshots.call(coordinator, step);
}

async function emitStep(
  emit: Emitter,
  tok: Tokenizer,
  report: StepReport,
  seconds: number,
  limits: { samples: number; matches: number },
): Promise<void> {
  const { step, rollouts } = report;
  const ok = rollouts.filter((r) => r.endReason !== 'error');
  const learnerReturns = ok.flatMap((r) => Object.values(r.agents).filter((a) => a.learn).map((a) => a.totalReward));
  const mean = (xs: number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
  const values: Record<string, number | null> = {
    reward: mean(learnerReturns),
    episodes: rollouts.length,
    episodeErrors: rollouts.length - ok.length,
    turns: mean(ok.flatMap((r) => Object.values(r.agents).filter((a) => a.learn).map((a) => a.turns))),
    responseTokens: mean(ok.flatMap((r) => Object.values(r.agents).filter((a) => a.learn).map((a) => a.responseTokens))),
    stepSeconds: seconds,
  };
  if (Object.keys(report.meanReward).length > 1) {
    for (const [agent, r] of Object.entries(report.meanReward)) values[`reward.${agent}`] = r;
    values.winRate = learnerReturns.length === 0 ? null : learnerReturns.filter((r) => r > 0).length / learnerReturns.length;
  }
  for (const [key, value] of Object.entries(report.metrics[POLICY] ?? {})) values[key === 'step' ? 'trainerStep' : key] = value;
  await emit.metrics(step, values);
  await emit.rollouts(rolloutItems(tok, step, rollouts, limits.samples));
  if (limits.matches > 0) {
    await emit.matches(rollouts.slice(0, limits.matches).map((r) => matchItem(step, r, report.opponents[rollouts.indexOf(r)] ?? {})));
    if (rollouts.length > 0) await emit.boards(boardItems(step, 0, rollouts[0]));
  }
  const unfit = rollouts.filter((r) => r.endReason === 'context' && r.moves.length === 0).length;
  if (unfit > 0) emit.log('warn', `${unfit} of ${rollouts.length} episodes ended before the first move: the prompt does not fit the model's context`);
  const errors = rollouts.filter((r) => r.error).slice(0, 3);
  for (const r of errors) emit.log('warn', `episode ${r.episodeId} failed: ${r.error!.message}`);
  emit.log('info', `step ${step}: reward ${values.reward?.toFixed(3) ?? '-'} (${rollouts.length} episodes, ${seconds.toFixed(2)} s)`);
}

/** Rows of a data-dependent environment's dataset version (JSONL in the blob store). */
async function datasetRows(assignment: Assignment, datasetVersionId: string | undefined, sink: JobSink): Promise<Json[]> {
  if (!datasetVersionId) throw new JobFailure('this environment reads a dataset: the config needs datasetVersionId');
  const key = assignment.blobKeys?.[datasetVersionId];
  if (!key) throw new JobFailure(`the assignment has no storage key for dataset version ${datasetVersionId}`);
  return parseJsonl(new TextDecoder().decode(await sink.fetchBlob(key)));
}

export function parseJsonl(text: string): Json[] {
  const rows: Json[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      rows.push(JSON.parse(line) as Json);
    } catch (e) {
      throw new JobFailure(`dataset line ${i + 1} is not JSON: ${(e as Error).message}`);
    }
  });
  if (rows.length === 0) throw new JobFailure('the dataset has no rows');
  return rows;
}

