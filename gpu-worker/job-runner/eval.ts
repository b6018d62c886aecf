/**
 * An EVAL job: N episodes of a checkpoint's policy, scored. In a multi-agent environment the
 * policy plays every seat in turn against a fixed opponent (the environment's scripted bot,
 * random moves, or another checkpoint), and each game is streamed as a match; the score is the
 * win rate. In a single-agent environment the score is the mean episode return. The policy does
 * not learn; everything is seeded from the config's seed.
 */
import { type LanguageModel } from '../engine/model';
import { type Tokenizer } from '../engine/tokenizer';
import { modelPolicy } from '../runtime/engine-policy';
import { type EpisodeRollout, type Player, runRollouts } from '../runtime/rollout';
import { type Policy } from '../runtime/policy';
import { type EnvironmentHandle } from '../runtime/environment-handle';
import { evalJobConfigSchema } from '../../sdk/job-config';
import { manifestSchema, manifestTraining } from '../../sdk/manifest';
import { type Assignment } from '../../sdk/worker-protocol';
import { CheckpointStore } from './checkpoints';
import { baseModelLoader } from './model-cache';
import { Emitter, matchItem } from './emit';
import { type JobControl, type JobSink } from './sink';
import { failed } from './lifecycle';
import { loadPolicy } from './load-policy';
import { fetchRows } from './dataset-rows';
import { type Json } from '../../sdk/environment/schema';
import { frequentErrors } from './outcomes';
import { scoreEpisodes } from './scores';
import { seatSwitchedSpecs } from './evaluate-policy';
import { openJobEnvironment } from './job-environment';
import { JobFailure, type JobResult } from './types';

export async function runEval(assignment: Assignment, sink: JobSink, control: JobControl): Promise<JobResult> {
  const emit = new Emitter(sink);
  const store = new CheckpointStore(sink, baseModelLoader(assignment, sink));
  const models: LanguageModel[] = [];
  let env: EnvironmentHandle | null = null;
  try {
    const config = evalJobConfigSchema.parse(assignment.config);
    if (!assignment.environment) throw new JobFailure('an EVAL job needs an environment version');
    const manifest = manifestSchema.parse(assignment.environment.manifest);
    const training = manifestTraining(manifest);
    const loaded = await openJobEnvironment(manifest, assignment, emit);
    if (!loaded.ok) throw new JobFailure(`the environment does not compile: ${loaded.errors.map((e) => e.message).join('; ')}`);
    env = loaded.env;

    const load = async (id: string): Promise<{ model: LanguageModel; tokenizer: Tokenizer }> => {
      const loaded = await loadPolicy(assignment, store, emit, { baseCheckpointId: id, resume: false });
      models.push(loaded.model);
      return loaded;
    };
    const { model, tokenizer: tok } = await load(config.checkpointId);
    const policies: Record<string, Policy> = { policy: modelPolicy(model, tok) };
    const agents = env.description.agents;

    let opponent: Player | null = null;
    let opponentName = '';
    if (agents.length > 1) {
      if (typeof config.against === 'object' && 'bot' in config.against) {
        const named = config.against.bot;
        if (!env.description.bots.includes(named)) throw new JobFailure(`${manifest.name} has no bot "${named}"; its bots are ${env.description.bots.join(', ') || 'none'}`);
        opponent = { kind: 'bot', bot: named };
        opponentName = named;
      } else if (typeof config.against === 'object') {
        const other = await load(config.against.checkpointId);
        if (other.tokenizer.vocabSize !== tok.vocabSize) throw new JobFailure('the opponent checkpoint uses a different tokenizer');
        opponentName = `checkpoint:${config.against.checkpointId}`;
        // Its slot is named as a TRAIN job's checkpoint opponent is, so the recorded matches say which checkpoint played.
        policies[opponentName] = modelPolicy(other.model, other.tokenizer);
        opponent = { kind: 'policy', policy: opponentName, learn: false };
      } else {
        const bots = env.description.bots;
        const bot = config.against === 'random' ? bots.find((b) => b === 'random') : (bots.find((b) => b !== 'random') ?? bots[0]);
        if (!bot) throw new JobFailure(`${manifest.name} has no ${config.against === 'random' ? '"random" bot' : 'bot'} to play against`);
        opponent = { kind: 'bot', bot };
        opponentName = bot;
      }
    }

    // A data-dependent environment is played on its dataset's rows (the held-out split), in order.
    let rows: Json[] | undefined;
    if (manifest.dataset) {
      if (!config.datasetVersionId) throw new JobFailure(`${manifest.name} reads dataset rows: the eval config needs datasetVersionId (its held-out split, ${manifest.dataset.heldOut ?? manifest.dataset.train})`);
      rows = await fetchRows(assignment, sink, config.datasetVersionId);
    }

    const { specs, seats } = seatSwitchedSpecs(agents, config.games, config.seed, opponent, rows);
    emit.log('info', `evaluating ${config.checkpointId} on ${manifest.name}: ${config.games} games${opponent ? ` against ${opponentName}` : ''}`);
    await emit.flushLogs();

    // In chunks, so a cancel or preempt is seen between them (an evaluation has nothing to checkpoint).
    const rollouts: EpisodeRollout[] = [];
    const chunk = Math.max(agents.length, 16);
    for (let i = 0; i < specs.length; i += chunk) {
      await new Promise((resolve) => setImmediate(resolve));
      if (control.cancelled || control.preempted) {
        const outcome = control.cancelled ? 'cancelled' : 'preempted';
        emit.log('info', `${outcome} after ${rollouts.length} games`);
        await emit.flushLogs();
        return { outcome, reason: `${outcome} after ${rollouts.length} of ${config.games} games` };
      }
      const part = await runRollouts(env, tok, policies, specs.slice(i, i + chunk), {
        maxTurns: manifest.limits.maxTurns,
        maxTokensPerTurn: manifest.limits.maxTokensPerTurn,
        maxResponseTokens: manifest.limits.maxResponseTokens,
        temperature: config.temperature ?? ('temperature' in training ? training.temperature : 1),
        maskActions: config.maskActions,
        contextLength: model.contextLength,
        seed: config.seed * 7919 + i,
      });
      rollouts.push(...part);
      if (agents.length > 1) {
        await emit.matches(part.map((r, k) => matchItem(null, r, Object.fromEntries(agents.filter((a) => a !== seats[i + k]).map((a) => [a, opponentName])))));
      }
    }

    const scores = scoreEpisodes(rollouts, seats, agents.length > 1, { tools: env.description.tools.length > 0 });
    if (scores.games === 0) throw new JobFailure(`every one of the ${rollouts.length} games failed; most frequent: ${frequentErrors(rollouts)}`);
    await emit.metrics(0, scores.metrics);
    emit.log('info', scores.summary);
    await emit.flushLogs();
    return { outcome: 'succeeded', reason: '' };
  } catch (e) {
    return await failed(emit, e);
  } finally {
    models.forEach((m) => m.dispose());
    await env?.dispose();
    store.dispose();
  }
}
