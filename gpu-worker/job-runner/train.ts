/**
 * A TRAIN job (GRPO or PPO on an environment version), top to bottom:
 *
 *   config + manifest → environment in the sandbox → policy (resumed, from a base, or new) →
 *   the warm start, if the config asks for one and it is not done (warm-start.ts) →
 *   for each step: [preempt? checkpoint and stop] rollout phase + update phase (the coordinator),
 *   metrics, samples, matches and boards, logs; a training checkpoint every `checkpointEvery`
 *   steps → at the end a training and a sampler checkpoint.
 *
 * Steps are counted from 1 wherever they are seen (sdk/live.ts, stepNumber): step N's metrics,
 * samples, matches, boards and log line carry N, and a checkpoint after it has step N (N steps
 * done), so a job that resumes from it runs step N + 1 next. The loop's index counts from 0, and
 * everything random is seeded from (seed, index); the
 * trainer's RNG and optimiser come back from the checkpoint, so a resumed run continues exactly
 * as the uninterrupted one would have.
 */
import { type LanguageModel } from '../engine/model';
import { MultiAgentCoordinator } from '../runtime/coordinator';
import { modelPolicy } from '../runtime/engine-policy';
import { type EnvironmentHandle } from '../runtime/environment-handle';
import { SandboxEnvironment } from '../runtime/sandbox/sandbox-environment';
import { resolveJobTraining, trainJobConfigSchema } from '../../sdk/job-config';
import { manifestSchema } from '../../sdk/manifest';
import { stepNumber } from '../../sdk/live';
import { type Assignment } from '../../sdk/worker-protocol';
import { CheckpointStore } from './checkpoints';
import { baseModelLoader } from './model-cache';
import { Emitter } from './emit';
import { emitStep } from './emit-step';
import { fetchRows } from './dataset-rows';
import { openJobEnvironment } from './job-environment';
import { loadPolicy } from './load-policy';
import { makeLearners } from './learners';
import { loadOpponentCheckpoints } from './opponent-checkpoints';
import { OutcomeWatch } from './outcomes';
import { cannotEvaluate, evaluatePolicy } from './evaluate-policy';
import { type JobControl, type JobSink } from './sink';
import { type JobResult, JobFailure, type RunOptions } from './types';
import { failed, finishTraining, stopBeforeStep } from './lifecycle';
import { runWarmStart } from './warm-start';

export async function runTrain(assignment: Assignment, sink: JobSink, control: JobControl, options: RunOptions = {}): Promise<JobResult> {
  const emit = new Emitter(sink);
  const store = new CheckpointStore(sink, baseModelLoader(assignment, sink));
  let env: EnvironmentHandle | null = null;
  const disposables: { dispose(): void }[] = [];
  try {
    const config = trainJobConfigSchema.parse(assignment.config);
    if (!assignment.environment) throw new JobFailure('a TRAIN job needs an environment version');
    const manifest = manifestSchema.parse(assignment.environment.manifest);
    // The manifest's own options, then the job's, over the documented defaults (sdk/training-config.ts).
    const resolved = resolveJobTraining('TRAIN', config, assignment.environment.manifest);
    if (!resolved.ok) throw new JobFailure(`invalid training config: ${resolved.problems.join('; ')}`);
    const training = resolved.config;
    if (training.algorithm === 'sft') throw new JobFailure('algorithm "sft" trains on a dataset: submit an SFT job');
    emit.log('info', `job ${assignment.jobId} attempt ${assignment.attempt}: ${training.algorithm} on ${manifest.name}@${manifest.version}, ${training.steps} steps`);

    // The environment (sandboxed code, or its servers over HTTP), with its console going to the job's log.
    const loaded = await openJobEnvironment(manifest, assignment, emit);
    if (!loaded.ok) throw new JobFailure(`the environment does not compile: ${loaded.errors.map((e) => `${e.location ? `${e.location.file}:${e.location.line}: ` : ''}${e.message}`).join('; ')}`);
    env = loaded.env;

    if (manifest.dataset && !config.datasetVersionId) throw new JobFailure('this environment reads a dataset: the config needs datasetVersionId');
    const rows = manifest.dataset && config.datasetVersionId ? await fetchRows(assignment, sink, config.datasetVersionId) : undefined;

    const policy = await loadPolicy(assignment, store, emit, {
      baseCheckpointId: config.baseCheckpointId,
      model: training.model,
      valueHead: training.algorithm === 'ppo',
      seed: training.seed,
      sink,
      lora: training.lora,
    });
    const { model, tokenizer: tok, startStep } = policy;
    disposables.push(model);
    if (policy.reference) disposables.push(policy.reference);
    const note = (step: number) => ({ step, jobId: assignment.jobId, attempt: assignment.attempt, training });

    // Evaluations: greedy, on held-out rows, after the warm start and every evalEvery steps; of the
    // policy being warm-started, then of the first learner's (the run's).
    let evaluated: LanguageModel = model;
    const evalRows = config.evalDatasetVersionId ? await fetchRows(assignment, sink, config.evalDatasetVersionId) : undefined;
    const noEvaluation = training.evalEpisodes > 0 ? cannotEvaluate(env, evalRows) : 'evalEpisodes is 0';
    if (noEvaluation && training.evalEpisodes > 0) emit.log('warn', `no evaluation during training: ${noEvaluation}`);
    const evaluation = (seed: number) =>
      evaluatePolicy({
        env: env!, tokenizer: tok, policy: modelPolicy(evaluated, tok), episodes: training.evalEpisodes, rows: evalRows, seed,
        rollout: {
          maxTurns: manifest.limits.maxTurns, maxTokensPerTurn: manifest.limits.maxTokensPerTurn, maxResponseTokens: manifest.limits.maxResponseTokens,
          contextLength: evaluated.contextLength, maskActions: training.maskActions,
        },
      });

    // Seats: the learners share one policy, or each has its own (independentLearners); the
    // manifest's opponent mix fills the other seats.
    const agents = env.description.agents;
    // Over HTTP there are no bots for the other seats: unless told otherwise, every agent learns.
    const learnerAgents = training.learners ?? (env instanceof SandboxEnvironment ? [agents[0]] : agents);

    // The warm start, unless a checkpoint past it is resumed: one that stopped in the middle of it
    // carries its SFT step and trainer state; any other resumed checkpoint was written after it.
    const midWarmStart = policy.source === 'resume' ? policy.note?.warmStartStep : undefined;
    const warmStarting = training.warmStart && (policy.source !== 'resume' || midWarmStart !== undefined);
    if (warmStarting) {
      const interrupted = await runWarmStart({
        assignment, sink, emit, store, control, env: env instanceof SandboxEnvironment ? env : null, limits: manifest.limits, warmStart: training.warmStart!, seed: training.seed, model, tokenizer: tok, rows,
        agents: training.switchSeats ? agents : learnerAgents, switchSeats: training.switchSeats, note: note(0),
        resume: midWarmStart !== undefined && policy.trainerState ? { step: midWarmStart, trainerState: policy.trainerState } : null,
        evaluate: noEvaluation ? null : () => evaluation(training.seed * 31 + 999_983),
      });
      if (interrupted) return interrupted;
    }

    // The learners' trainers and slots (learners.ts). Made after the warm start: a KL reference is a
    // copy of the policy the RL phase starts from, and independent learners all start from it.
    // (`checkpoint:<id>` opponents are saved checkpoints, loaded below: opponent-checkpoints.ts.)
    const resumed = policy.source === 'resume' && !warmStarting ? { trainerState: policy.trainerState, reference: policy.reference, step: startStep } : null;
    const learners = await makeLearners({ assignment, store, emit, training, agents: learnerAgents, model, tokenizer: tok, resumed });
    disposables.push(...learners);
    evaluated = learners[0].model;
    const multiAgent = agents.length > 1;
    // Saved checkpoints in the mix ("checkpoint:<id>"): loaded once, never learning.
    const saved = multiAgent ? await loadOpponentCheckpoints(assignment, store, emit, training.opponents, { tokenizer: tok, contextLength: model.contextLength }) : { slots: {}, models: [] };
    disposables.push(...saved.models);
    const coordinator = new MultiAgentCoordinator({
      env,
      tokenizer: tok,
      policies: { ...Object.fromEntries(learners.map((l) => [l.id, l.slot])), ...saved.slots },
      learners: Object.fromEntries(learnerAgents.map((a) => [a, learners.find((l) => l.agent === a)?.id ?? learners[0].id])),
      opponents: multiAgent ? training.opponents : undefined,
      switchSeats: multiAgent && training.switchSeats,
      pool: { every: training.poolEvery, size: training.poolSize, sampling: training.poolSampling },
      rollout: {
        maxTurns: manifest.limits.maxTurns,
        maxTokensPerTurn: manifest.limits.maxTokensPerTurn,
        maxResponseTokens: manifest.limits.maxResponseTokens,
        temperature: training.temperature,
        contextLength: model.contextLength,
        maskActions: training.maskActions,
        seed: training.seed,
      },
      tasksPerStep: training.batchSize,
      groupSize: training.groupSize,
      rows,
      seed: training.seed,
      startStep,
    });

    // A resumed attempt has its checkpoint already, unless it resumed in the middle of the warm start.
    let lastTrainingCheckpoint = policy.source === 'resume' && !warmStarting ? startStep : -1;
    // One per learner of its own, last to first: the first learner's is the newest (the run's).
    const checkpoint = async (step: number) => {
      if (lastTrainingCheckpoint === step) return;
      for (const l of [...learners].reverse()) {
        const up = await store.uploadTraining(l.model, tok, l.trainer, { ...note(step), ...(l.agent === undefined ? {} : { agent: l.agent }) });
        emit.log('info', `training checkpoint${l.agent === undefined ? '' : ` of ${l.agent}`} after step ${step}: ${up.checkpointId}`);
      }
      lastTrainingCheckpoint = step;
    };
    // The warm start's end: an attempt resumed from here or later does not redo it.
    if (warmStarting) await checkpoint(0);
    const samples = options.samplesPerStep ?? 4;
    const matchesPerStep = options.matchesPerStep ?? 2;

    const outcomes = new OutcomeWatch(training);
    // Evaluations during training, as `eval/...` metrics at the step they follow.
    const evaluate = async (step: number) => {
      const scores = await evaluation(training.seed * 31 + step);
      await emit.metrics(step, scores.metrics);
      emit.log('info', `evaluation after step ${step}: ${scores.summary}`);
    };
    for (let step = startStep; step < training.steps; step++) {
      const interrupted = await stopBeforeStep(emit, control, step, checkpoint);
      if (interrupted) return interrupted;
      const started = performance.now();
      const report = await coordinator.runStep();
      if (report.step !== step) throw new Error(`the coordinator ran step ${report.step}, expected ${step}`);
      const seconds = (performance.now() - started) / 1000;
      const number = stepNumber(step);
      await emitStep(emit, tok, report, seconds, { samples, matches: multiAgent ? matchesPerStep : 0, steps: training.steps, lead: learners[0].id });
      const verdict = outcomes.observe(number, report.rollouts);
      if (verdict.warn) emit.log('warn', verdict.warn);
      if (verdict.fail) throw new JobFailure(verdict.fail);
      await emit.flushLogs();
      // Step `number` is done: so are `number` steps.
      if (!noEvaluation && (number % training.evalEvery === 0 || number === training.steps)) await evaluate(number);
      if (number % training.checkpointEvery === 0 && number < training.steps) await checkpoint(number);
      options.onStep?.(number);
    }
    return await finishTraining(emit, store, checkpoint, learners, tok, training.steps);
  } catch (e) {
    return await failed(emit, e);
  } finally {
    for (const d of disposables.reverse()) d.dispose();
    await env?.dispose();
    store.dispose();
  }
}
