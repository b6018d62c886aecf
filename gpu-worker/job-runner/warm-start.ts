/**
 * The warm start of a TRAIN job (`training.warmStart`, sdk/training-config.ts): supervised steps on
 * demonstrations before the RL phase, in the same job. A model trained from scratch cannot write an
 * exact answer, a tool call or a move before it has seen one, so GRPO alone gets reward 0 in every
 * group and learns nothing (env-templates/LEARNING.md: math from scratch, reward 0 at every step);
 * a few hundred SFT steps on a bot's episodes take it to where RL has a signal.
 *
 * Demonstrations come from one of the environment's bots playing every seat, laid out exactly as the
 * rollout prompts the policy (runtime/demonstrations.ts: system prompt and tool paragraph,
 * observations and tool results with loss mask 0, the imitated seats' actions with mask 1), or from
 * a dataset version's rows as an SFT job reads them (sft-batches.ts). In a game, `opponents` has
 * the bot play only the imitated seat against bots of the mix, so that it is imitated in positions
 * like those the policy will meet; `augment: 'symmetries'` learns each demonstration in every
 * symmetric position the environment declares (a board's rotations and reflections).
 *
 * Its steps are numbered from 0 and stream under `warmstart/` keys. A preemption checkpoints with
 * the SFT trainer's state and `warmStartStep` in the note (at job step 0), so the next attempt goes
 * on where it stopped; once it is done, train.ts checkpoints at step 0 with the RL trainer, and an
 * attempt resumed from that or any later checkpoint does not redo it.
 */
import { type Sequence } from '../engine/batch';
import { type LanguageModel } from '../engine/model';
import { Rng } from '../engine/rng';
import { SFTTrainer } from '../engine/sft';
import { type Tokenizer } from '../engine/tokenizer';
import { type TrainerState } from '../engine/trainer-core';
import { demonstrationSequences } from '../runtime/demonstrations';
import { playEpisode } from '../runtime/play-episode';
import { type SandboxEnvironment } from '../runtime/sandbox/sandbox-environment';
import type { Transcript } from '../../sdk/dry-run-report';
import { type Json } from '../../sdk/environment/schema';
import { type Manifest } from '../../sdk/manifest';
import { type WarmStart } from '../../sdk/training-config';
import { type Assignment } from '../../sdk/worker-protocol';
import { type CheckpointStore, type RunnerNote } from './checkpoints';
import { type Emitter } from './emit';
import { stopBeforeStep } from './lifecycle';
import { type Scores } from './scores';
import { batchIndexes, datasetDemonstrations } from './sft-batches';
import { type JobControl, type JobSink } from './sink';
import { warmStartMetrics } from './step-metrics';
import { fetchRows } from './dataset-rows';
import { JobFailure, type JobResult } from './types';

export interface WarmStartRun {
  assignment: Assignment;
  sink: JobSink;
  emit: Emitter;
  store: CheckpointStore;
  control: JobControl;
  /** The environment's code, whose bots a `from: "bot"` warm start imitates; null over HTTP (a dataset's rows only). */
  env: SandboxEnvironment | null;
  limits: Manifest['limits'];
  warmStart: WarmStart;
  /** The run's seed: demonstrations' episodes and batches are functions of it. */
  seed: number;
  model: LanguageModel;
  tokenizer: Tokenizer;
  /** A data-dependent environment's train rows: the bot plays on them. */
  rows?: Json[];
  /** The seats whose actions are imitated: the run's learners (every seat with switchSeats). */
  agents: readonly string[];
  /** The run's switchSeats: with warm-start opponents, the bot then plays one seat per episode, turn about. */
  switchSeats?: boolean;
  /** Where a resumed attempt's warm start stood: its SFT steps done and the SFT trainer's state. */
  resume: { step: number; trainerState: TrainerState } | null;
  /** The runner's note for a checkpoint (its step and warm-start step are set here). */
  note: RunnerNote;
  /** The run's evaluation of the current policy, or null when it cannot evaluate. */
  evaluate: (() => Promise<Scores>) | null;
}

/** Runs the warm start to its end (null), or until a cancel or preemption stops the job (its result). */
export async function runWarmStart(w: WarmStartRun): Promise<JobResult | null> {
  const ws = w.warmStart;
  const started = performance.now();
  const contextLength = w.model.contextLength;
  const sequences =
    ws.from === 'bot'
      ? await botDemonstrations(w, ws.bot, ws.episodes, ws.opponents, ws.augment)
      : datasetDemonstrations(w.tokenizer, await fetchRows(w.assignment, w.sink, ws.datasetVersionId), contextLength, w.emit);
  const prepared = ((performance.now() - started) / 1000).toFixed(1);
  const against = ws.from === 'bot' && ws.opponents ? ` against ${Object.entries(ws.opponents).map(([name, share]) => `${name} ${share}`).join(', ')}` : '';
  const augmented = ws.from === 'bot' && ws.augment === 'symmetries' ? ' (with their symmetries)' : '';
  const source = ws.from === 'bot' ? `bot "${ws.bot}"${against}${augmented}` : `dataset version ${ws.datasetVersionId}`;
  w.emit.log(
    'info',
    `warm start: SFT on ${sequences.length} demonstrations of ${source}, ${ws.steps} steps of ${ws.batchSize}, learning rate ${ws.learningRate}${ws.decay ? ' with cosine decay' : ''}` +
      (w.resume ? `, from warm-start step ${w.resume.step}` : '') +
      ` (made in ${prepared} s)`,
  );

  const trainer = new SFTTrainer(w.model, { learningRate: ws.learningRate, warmupSteps: ws.warmupSteps, totalSteps: ws.decay ? ws.steps : 0, seed: w.seed });
  try {
    if (w.resume) trainer.importState(w.resume.trainerState);
    const checkpoint = async (step: number) => {
      const up = await w.store.uploadTraining(w.model, w.tokenizer, trainer, { ...w.note, step: 0, warmStartStep: step });
      w.emit.log('info', `warm-start checkpoint at warm-start step ${step}: ${up.checkpointId}`);
    };
    for (let step = w.resume?.step ?? 0; step < ws.steps; step++) {
      const interrupted = await stopBeforeStep(w.emit, w.control, step, checkpoint, 'warm-start step');
      if (interrupted) return interrupted;
      const metrics = await trainer.stepAsync(batchIndexes(sequences.length, ws.batchSize, w.seed, step).map((i) => sequences[i]));
      const epoch = Math.floor((step * ws.batchSize) / sequences.length);
      await w.emit.metrics(step, { ...warmStartMetrics(metrics, epoch), ...(step === 0 ? { 'warmstart/demonstrations': sequences.length } : {}) });
      if (step % 50 === 0 || step === ws.steps - 1) w.emit.log('info', `warm-start step ${step}: loss ${metrics.loss.toFixed(4)}`);
      await w.emit.flushLogs();
    }
  } finally {
    trainer.dispose();
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (w.evaluate) {
    const scores = await w.evaluate();
    const legal = scores.metrics['eval/legal_move_rate'];
    await w.emit.metrics(ws.steps - 1, { 'warmstart/eval_score': scores.metrics['eval/score'], ...(legal === undefined ? {} : { 'warmstart/eval_legal_move_rate': legal }) });
    w.emit.log('info', `evaluation after the warm start: ${scores.summary}`);
  }
  w.emit.log('info', `warm start done in ${seconds} s; the ${w.note.training?.algorithm ?? 'RL'} phase starts`);
  await w.emit.flushLogs();
  return null;
}

/**
 * Who plays each seat of warm-start episode `i`: without opponents the bot plays every seat and the
 * learners' seats are imitated; with them the bot plays the imitated seats (one, turn about, with
 * switchSeats; else the learners') and the opponent bots, drawn by their shares, the others.
 */
export function warmStartSeats(
  agents: readonly string[],
  learners: readonly string[],
  bot: string,
  opponents: Record<string, number> | undefined,
  options: { switchSeats: boolean; rng: Rng; episode: number },
): { players: Record<string, string>; imitated: readonly string[] } {
  if (!opponents) return { players: Object.fromEntries(agents.map((a) => [a, bot])), imitated: learners };
  const imitated = options.switchSeats ? [agents[options.episode % agents.length]] : learners;
  const players: Record<string, string> = {};
  for (const agent of agents) players[agent] = imitated.includes(agent) ? bot : pickWeighted(options.rng, opponents);
  return { players, imitated };
}

function pickWeighted(rng: Rng, mix: Record<string, number>): string {
  const entries = Object.entries(mix).filter(([, w]) => w > 0);
  let x = rng.next() * entries.reduce((a, [, w]) => a + w, 0);
  for (const [name, w] of entries) {
    x -= w;
    if (x < 0) return name;
  }
  return entries[entries.length - 1][0];
}

/**
 * The bot's episodes as the policy's training sequences. Warns about what the policy could not
 * learn from them: episodes that failed, sequences longer than the context, and actions longer than
 * a turn may be (the policy would be cut off before it finishes one).
 */
async function botDemonstrations(w: WarmStartRun, bot: string, episodes: number, opponents: Record<string, number> | undefined, augment: 'none' | 'symmetries'): Promise<Sequence[]> {
  const env = w.env;
  if (!env) throw new JobFailure('warmStart imitates the environment\'s bots, and an HTTP environment has none: warm-start from a dataset of demonstrations ({"from": "dataset"}) or a checkpoint (baseCheckpointId) instead');
  const { agents, bots, context, toolPrompt } = env.description;
  if (!bots.includes(bot)) throw new JobFailure(`warmStart.bot: this environment has no bot "${bot}"; its bots: ${bots.join(', ') || 'none'}`);
  if (augment === 'symmetries' && !env.description.symmetries) throw new JobFailure('warmStart.augment: this environment defines no symmetries (the `symmetries` of its definition)');
  if (opponents) {
    if (agents.length < 2) throw new JobFailure('warmStart.opponents: this environment has one agent; opponents play the other seats of a multi-agent one');
    const unknown = Object.keys(opponents).filter((name) => !bots.includes(name));
    if (unknown.length > 0) throw new JobFailure(`warmStart.opponents: this environment has no bot ${unknown.map((n) => `"${n}"`).join(', ')}; its bots: ${bots.join(', ')}`);
    if (!w.switchSeats && agents.every((a) => w.agents.includes(a))) w.emit.log('warn', 'warm start: every seat is a learner\'s, so warmStart.opponents play no seat');
  }
  // Train rows in a seeded order, so a warm start of fewer episodes than rows sees a fair sample.
  const rows = w.rows ? new Rng(w.seed * 7919 + 17).shuffle([...w.rows]) : undefined;
  const seatRng = new Rng(w.seed * 7919 + 29);
  const transcripts: Transcript[] = [];
  const imitated: (readonly string[])[] = [];
  for (let i = 0; i < episodes; i++) {
    // Seeds of their own, apart from the RL phase's (the coordinator's are small multiples of the run's seed).
    const seed = (0x40000000 + w.seed * 1_000_003 + i) >>> 0;
    const seats = warmStartSeats(agents, w.agents, bot, opponents, { switchSeats: w.switchSeats ?? false, rng: seatRng, episode: i });
    imitated.push(seats.imitated);
    transcripts.push(
      await playEpisode(env, {
        episodeId: `warm-${i}`,
        seed,
        taskSeed: seed,
        row: rows?.[i % rows.length],
        maxTurns: w.limits.maxTurns,
        actor: (agent, _observation, episodeId) => env.bot({ episodeId, bot: seats.players[agent] ?? bot }),
      }),
    );
  }
  const failed = transcripts.filter((t) => t.endReason === 'error');
  if (failed.length === transcripts.length) throw new JobFailure(`warm start: every one of the ${episodes} episodes of bot "${bot}" failed: ${failed[0].error?.message ?? 'unknown error'}`);
  if (failed.length > 0) w.emit.log('warn', `warm start: ${failed.length} of ${episodes} episodes of bot "${bot}" failed and are left out (first: ${failed[0].error?.message ?? 'unknown error'})`);

  const contextLength = w.model.contextLength;
  const played = transcripts.map((t, i) => ({ t, imitated: imitated[i] }));
  const demonstrated =
    augment === 'symmetries' ? (await Promise.all(played.map((p) => symmetricTranscripts(env, p.t)))).flatMap((ts, i) => ts.map((t) => ({ t, imitated: played[i].imitated }))) : played;
  const all = demonstrated.flatMap(({ t, imitated: seats }) => demonstrationSequences(w.tokenizer, [t], { context, toolPrompt, agents: seats, contextLength: Number.POSITIVE_INFINITY }));
  const fit = all.filter((s) => s.tokens.length <= contextLength);
  if (fit.length === 0) {
    const shortest = Math.min(...all.map((s) => s.tokens.length));
    throw new JobFailure(`warm start: no demonstration of bot "${bot}" fits the model's context (${contextLength} tokens; the shortest is ${shortest}): raise training.model.contextLength or shorten the prompt`);
  }
  if (fit.length < all.length) w.emit.log('warn', `warm start: ${all.length - fit.length} of ${all.length} demonstrations are longer than the context (${contextLength} tokens) and are left out`);

  const actions = transcripts.flatMap((t, i) => (t.endReason === 'error' ? [] : t.turns.filter((turn) => imitated[i].includes(turn.agent)).map((turn) => w.tokenizer.encode(turn.action).length)));
  const over = actions.filter((n) => n > w.limits.maxTokensPerTurn);
  if (over.length > 0) {
    w.emit.log(
      'warn',
      `warm start: ${over.length} of ${actions.length} actions of bot "${bot}" are longer than limits.maxTokensPerTurn (${w.limits.maxTokensPerTurn} tokens; the longest is ${Math.max(...over)}): ` +
        'the policy is cut off before it can finish one; raise maxTokensPerTurn in the manifest',
    );
  }
  return fit;
}

/**
 * A played episode as each of the environment's symmetries shows it (the first is the episode
 * itself): every turn's observation and action transformed by the same symmetry.
 */
async function symmetricTranscripts(env: SandboxEnvironment, t: Transcript): Promise<Transcript[]> {
  if (t.endReason === 'error' || t.turns.length === 0) return [t];
  const seen = await env.symmetries({ turns: t.turns.map((turn) => ({ agent: turn.agent, observation: turn.observation, action: turn.action })) });
  return seen[0].map((_, k) => ({ ...t, turns: t.turns.map((turn, j) => ({ ...turn, observation: seen[j][k].observation, action: seen[j][k].action })) }));
}
