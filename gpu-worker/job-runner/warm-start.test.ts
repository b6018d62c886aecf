/**
 * The warm start of TRAIN jobs through the job runner (in-memory sink): SFT on a bot's
 * demonstrations, then the RL phase, with its own metrics; preempted in the middle it resumes where
 * it stopped, and a job resumed past it does not redo it; demonstrations from a dataset version;
 * what a warm start that cannot run says.
 */
import { beforeAll, describe, expect, test } from 'vitest';
import { loadTemplate } from '../../env-templates/load-template';
import { testBackend } from '../test-support/engine/test-setup';
import { templateEnvironment, testAssignment } from '../test-support/job-runner/assignments';
import { describeMetric, type MetricItem } from '../../sdk/live';
import { CheckpointStore } from './checkpoints';
import { runJob } from './run-job';
import { Rng } from '../engine/rng';
import { warmStartSeats } from './warm-start';
import { JobControl, MemorySink } from './sink';

beforeAll(async () => {
  await testBackend();
});

/** Warm-start steps of the math-tools test (the template's are 500). */
const WARM_STEPS = 150;
/** The gomoku test's warm start (the template's: 100 games, 400 steps). */
const GOMOKU_WARM = { episodes: 100, steps: 150 };
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const values = (sink: MemorySink, key: string) => sink.items('metrics').filter((m) => m.key === key);

describe('warm start then GRPO on bandit', () => {
  test('imitating the oracle, then GRPO: mean reward ≥ 0.9 (fixed seed)', { timeout: 300_000 }, async () => {
    // The template's model and GRPO settings; a short warm start on its oracle bot. Measured (seed
    // 3): greedy 1.00 after the warm start, training reward (T = 1) 0.92–1.00 over the 10 GRPO
    // steps. After only 40 warm-start steps GRPO at the template's 1.5e-3 first fell to 0.53.
    const config = {
      environmentVersionId: 'bandit-v1',
      training: { steps: 10, evalEvery: 10, evalEpisodes: 32, seed: 3, warmStart: { from: 'bot', bot: 'oracle', episodes: 64, steps: 80, batchSize: 16 } },
    };
    const sink = new MemorySink();
    const result = await runJob(testAssignment({ config }), sink, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });

    // The warm start's own series, steps 0…79, then the RL phase's, steps 0…9.
    const loss = values(sink, 'warmstart/loss');
    expect(loss.map((m) => m.step)).toEqual(Array.from({ length: 80 }, (_, i) => i));
    expect(loss[79].value).toBeLessThan(loss[0].value * 0.1);
    expect(values(sink, 'warmstart/demonstrations')).toEqual([{ step: 0, key: 'warmstart/demonstrations', value: 64 }]);
    // Cosine decay over the warm start: the last step's rate is below the peak.
    const lr = values(sink, 'warmstart/lr').map((m) => m.value);
    expect(lr[79]).toBeLessThan(Math.max(...lr) * 0.2);
    expect(values(sink, 'warmstart/eval_score')[0].value).toBeGreaterThanOrEqual(0.9);
    const rewards = values(sink, 'reward/mean');
    expect(rewards.map((m) => m.step)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(mean(rewards.slice(-5).map((m) => m.value))).toBeGreaterThanOrEqual(0.9);
    expect(values(sink, 'eval/success_rate').at(-1)!.value).toBeGreaterThanOrEqual(0.9);
    expect(sink.items('metrics').filter((m) => !describeMetric(m.key)).map((m) => m.key)).toEqual([]);
    // A checkpoint marks the warm start's end (step 0), then the run's own.
    expect(sink.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@0', 'TRAINING@10', 'SAMPLER@10']);
    const logs = sink.items('logs').map((l) => l.message);
    expect(logs).toContainEqual(expect.stringMatching(/^warm start: SFT on 64 demonstrations of bot "oracle", 80 steps of 16, learning rate 0.003 with cosine decay \(made in [\d.]+ s\)$/));
    expect(logs).toContainEqual(expect.stringMatching(/^evaluation after the warm start: /));
  });
});

describe('warm start on math-tools', () => {
  test('after a short warm start on tool-user the policy calls the calculator in most episodes; tool results are never trainable', { timeout: 300_000 }, async () => {
    const math = loadTemplate('math-tools');
    const sink = new MemorySink();
    sink.blobs.set('train', new TextEncoder().encode(math.datasetFiles['data/train.jsonl']));
    // The template's warm start, shortened; one GRPO step whose 128 episodes are all streamed.
    const config = { environmentVersionId: 'mt', datasetVersionId: 'train', training: { steps: 1, evalEpisodes: 0, warmStart: { steps: WARM_STEPS } } };
    const result = await runJob(testAssignment({ config, environment: templateEnvironment('math-tools'), blobKeys: { train: 'train' } }), sink, new JobControl(), { samplesPerStep: 128 });
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    const episodes = sink.items('rollouts');
    expect(episodes).toHaveLength(128);
    const tool = episodes.flatMap((e) => e.segments.filter((s) => s.role === 'tool'));
    expect(tool.length).toBeGreaterThan(0);
    expect(tool.filter((s) => s.trainable)).toEqual([]);
    // A call that ran: its result is a number (a malformed call gets "error: …").
    const called = episodes.filter((e) => e.segments.some((s) => s.role === 'tool' && /^<tool_result>\d+<\/tool_result>$/.test(s.text)));
    console.log(`math-tools after ${WARM_STEPS} warm-start steps: ${called.length} of 128 episodes called the calculator; reward ${values(sink, 'reward/mean')[0].value}`);
    expect(called.length / episodes.length).toBeGreaterThan(0.5);
  });
});

describe('resuming', () => {
  // A tiny policy: these tests are about which steps run, not about learning.
  const tiny = { model: { layers: 1, width: 16, heads: 2, contextLength: 72 }, batchSize: 4, groupSize: 4, checkpointEvery: 100, evalEpisodes: 0 };
  const config = { environmentVersionId: 'bandit-v1', training: { ...tiny, steps: 4, warmStart: { from: 'bot', bot: 'oracle', episodes: 16, steps: 12, batchSize: 4 } } };
  const series = (items: MetricItem[], prefix: string) => items.filter((m) => m.key.startsWith(prefix) && m.key !== 'warmstart/eval_score').map((m) => `${m.step} ${m.key} ${m.value}`);
  let full: MemorySink;

  beforeAll(async () => {
    full = new MemorySink();
    expect(await runJob(testAssignment({ config }), full, new JobControl())).toEqual({ outcome: 'succeeded', reason: '' });
  });

  test('preempted in the middle of the warm start, the next attempt goes on from there', async () => {
    const first = new MemorySink();
    const control = new JobControl();
    first.onBatch = (kind, items) => {
      if (kind === 'metrics' && (items as MetricItem[]).some((m) => m.key === 'warmstart/loss' && m.step === 4)) control.preempt();
    };
    expect(await runJob(testAssignment({ config }), first, control)).toEqual({ outcome: 'preempted', reason: 'preempted before warm-start step 5; checkpointed' });
    expect(first.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@0']);
    const store = new CheckpointStore(first);
    try {
      const ckpt = await store.load(first.checkpoints[0].storageKey);
      expect(ckpt.note).toMatchObject({ step: 0, warmStartStep: 5 });
      expect(ckpt.trainerState?.algorithm).toBe('sft');
      ckpt.model.dispose();
    } finally {
      store.dispose();
    }

    const second = new MemorySink();
    second.blobs.set('k', first.checkpoints[0].bytes);
    const resumed = await runJob(testAssignment({ attemptId: 'att-2', attempt: 2, config, resumeFrom: { checkpointId: 'c', storageKey: 'k', step: 0 } }), second, new JobControl());
    expect(resumed.outcome).toBe('succeeded');
    // Warm-start steps 5…11, then the whole RL phase, exactly as the uninterrupted run made them.
    const expected = series(full.items('metrics'), 'warmstart/').filter((line) => Number(line.split(' ')[0]) >= 5);
    expect(series(second.items('metrics'), 'warmstart/')).toEqual(expected);
    expect(series(second.items('metrics'), 'loss/')).toEqual(series(full.items('metrics'), 'loss/'));
    expect(second.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@0', 'TRAINING@4', 'SAMPLER@4']);
  });

  test('resumed past the warm start, a job does not redo it', async () => {
    // The checkpoint that marks the warm start's end, at step 0.
    const end = full.checkpoints.find((c) => c.kind === 'TRAINING' && c.step === 0)!;
    const sink = new MemorySink();
    sink.blobs.set('k', end.bytes);
    const resumed = await runJob(testAssignment({ attemptId: 'att-2', attempt: 2, config, resumeFrom: { checkpointId: 'c', storageKey: 'k', step: 0 } }), sink, new JobControl());
    expect(resumed.outcome).toBe('succeeded');
    expect(sink.items('metrics').filter((m) => m.key.startsWith('warmstart/'))).toEqual([]);
    expect(series(sink.items('metrics'), 'loss/')).toEqual(series(full.items('metrics'), 'loss/'));
    expect(sink.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@4', 'SAMPLER@4']);
  });
});

describe('other sources, and what cannot run', () => {
  const tiny = { model: { layers: 1, width: 16, heads: 2, contextLength: 72 }, batchSize: 4, groupSize: 4, steps: 1, evalEpisodes: 0 };

  test('a dataset version: its rows as an SFT job reads them', async () => {
    const rows = ['red:C', 'green:A', 'blue:D', 'yellow:B'].map((p) => JSON.stringify({ system: 'Answer with one letter: A, B, C or D.', prompt: `colour: ${p.split(':')[0]}\narm:`, completion: p.split(':')[1] }));
    const sink = new MemorySink();
    sink.blobs.set('datasets/d1', new TextEncoder().encode(rows.join('\n')));
    const config = { environmentVersionId: 'bandit-v1', training: { ...tiny, warmStart: { from: 'dataset', datasetVersionId: 'd1', steps: 30, batchSize: 4, learningRate: 0.01 } } };
    const result = await runJob(testAssignment({ config, blobKeys: { d1: 'datasets/d1' } }), sink, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    const loss = values(sink, 'warmstart/loss');
    expect(loss).toHaveLength(30);
    expect(loss[29].value).toBeLessThan(loss[0].value * 0.5);
    expect(sink.items('logs').map((l) => l.message)).toContainEqual(expect.stringMatching(/^warm start: SFT on 4 demonstrations of dataset version d1, 30 steps of 4, learning rate 0.01 with cosine decay \(made in [\d.]+ s\)$/));
  });

  test('PPO too: the warm start trains the policy, then PPO its policy and value head', async () => {
    const sink = new MemorySink();
    const config = { environmentVersionId: 'bandit-v1', training: { ...tiny, algorithm: 'ppo', warmStart: { from: 'bot', bot: 'oracle', episodes: 8, steps: 3, batchSize: 4 } } };
    expect(await runJob(testAssignment({ config }), sink, new JobControl())).toEqual({ outcome: 'succeeded', reason: '' });
    expect(values(sink, 'warmstart/loss')).toHaveLength(3);
    expect(values(sink, 'loss/value')).toHaveLength(1);
  });

  test('an unknown bot, and a context no demonstration fits, fail saying what to change', async () => {
    const run = async (training: Record<string, unknown>) => runJob(testAssignment({ config: { environmentVersionId: 'bandit-v1', training: { ...tiny, ...training } } }), new MemorySink(), new JobControl());
    expect(await run({ warmStart: { from: 'bot', bot: 'oracel', episodes: 4, steps: 1 } })).toEqual({ outcome: 'failed', reason: 'warmStart.bot: this environment has no bot "oracel"; its bots: oracle, random' });
    expect(await run({ model: { ...tiny.model, contextLength: 16 }, warmStart: { from: 'bot', bot: 'oracle', episodes: 4, steps: 1 } })).toEqual({
      outcome: 'failed',
      reason: expect.stringMatching(/^warm start: no demonstration of bot "oracle" fits the model's context \(16 tokens; the shortest is \d+\): raise training.model.contextLength/),
    });
  });

  test('actions longer than a turn may be are warned about, naming the bot', async () => {
    const gomoku = templateEnvironment('gomoku');
    const manifest = { ...(gomoku.manifest as Record<string, unknown>), limits: { maxTurns: 41, maxTokensPerTurn: 3, maxResponseTokens: 1000 } };
    const sink = new MemorySink();
    const config = { environmentVersionId: 'g', training: { ...tiny, model: { ...tiny.model, contextLength: 1024 }, warmStart: { from: 'bot', bot: 'scripted', episodes: 1, steps: 1 } } };
    expect((await runJob(testAssignment({ config, environment: { ...gomoku, manifest } }), sink, new JobControl())).outcome).toBe('succeeded');
    expect(sink.items('logs').filter((l) => l.level === 'warn').map((l) => l.message)).toContainEqual(
      expect.stringMatching(/^warm start: \d+ of \d+ actions of bot "scripted" are longer than limits.maxTokensPerTurn \(3 tokens; the longest is \d+\)/),
    );
  });
});

describe('warm start on gomoku 9 × 9', () => {
  test('after the default warm start (shortened) alone, every move is legal and the policy beats the random and scripted bots (fixed seeds)', { timeout: 600_000 }, async () => {
    // The template's defaults (compact board, legal moves offered and masked, the expert teacher
    // playing against random and scripted, its games' 8 symmetries), the warm start cut to
    // GOMOKU_WARM steps. Its evaluation plays the scripted bot, greedy, colours alternated; then an
    // eval job plays the warm start's checkpoint against random. Measured: 16 of 16 against random,
    // 8 of 8 against scripted (52 s). Round 3's warm start (the expert against itself, no
    // symmetries) won 4 of these 8 against scripted (env-templates/LEARNING.md, rounds 3 and 4).
    const sink = new MemorySink();
    const config = {
      environmentVersionId: 'gomoku-v1',
      training: { steps: 1, batchSize: 1, groupSize: 4, evalEvery: 1, evalEpisodes: 8, warmStart: { episodes: GOMOKU_WARM.episodes, steps: GOMOKU_WARM.steps } },
    };
    const result = await runJob(testAssignment({ config, environment: templateEnvironment('gomoku') }), sink, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    expect(values(sink, 'warmstart/eval_legal_move_rate').map((m) => m.value)).toEqual([1]);
    expect(values(sink, 'warmstart/eval_score')[0].value).toBeGreaterThanOrEqual(0.75);
    expect(values(sink, 'eval/legal_move_rate').map((m) => m.value)).toEqual([1]);

    const warmed = sink.checkpoints.find((c) => c.kind === 'TRAINING' && c.step === 0)!;
    const evaluated = new MemorySink();
    evaluated.blobs.set('k', warmed.bytes);
    const games = 16;
    const evalResult = await runJob(
      testAssignment({ kind: 'EVAL', environment: templateEnvironment('gomoku'), blobKeys: { c: 'k' }, config: { checkpointId: 'c', environmentVersionId: 'gomoku-v1', against: 'random', games, temperature: 0 } }),
      evaluated,
      new JobControl(),
    );
    expect(evalResult).toEqual({ outcome: 'succeeded', reason: '' });
    const m = Object.fromEntries(evaluated.items('metrics').map((x) => [x.key, x.value]));
    console.log(`gomoku after ${GOMOKU_WARM.steps} warm-start steps: against random ${m['eval/win_rate']} over ${m['eval/games']} games, legal ${m['eval/legal_move_rate']}, mean length ${m['eval/mean_length']}; against scripted ${values(sink, 'warmstart/eval_score')[0].value}`);
    expect(m['eval/games']).toBe(games);
    expect(m['eval/legal_move_rate']).toBe(1);
    expect(m['eval/win_rate']).toBeGreaterThanOrEqual(0.75);
  });
});

describe('warm-start demonstrations against opponents, and their symmetries', () => {
  const rng = () => new Rng(7);
  test('without them the bot plays every seat; with them it plays the imitated seat, turn about with switchSeats', () => {
    const agents = ['black', 'white'];
    expect(warmStartSeats(agents, agents, 'expert', undefined, { switchSeats: true, rng: rng(), episode: 3 })).toEqual({ players: { black: 'expert', white: 'expert' }, imitated: agents });
    const r = rng();
    const seats = Array.from({ length: 4 }, (_, episode) => warmStartSeats(agents, agents, 'expert', { random: 1 }, { switchSeats: true, rng: r, episode }));
    expect(seats).toEqual([
      { players: { black: 'expert', white: 'random' }, imitated: ['black'] },
      { players: { black: 'random', white: 'expert' }, imitated: ['white'] },
      { players: { black: 'expert', white: 'random' }, imitated: ['black'] },
      { players: { black: 'random', white: 'expert' }, imitated: ['white'] },
    ]);
    // Without switchSeats the learners' seats are the bot's; the others are drawn by their shares.
    const drawn = Array.from({ length: 400 }, (_, episode) => warmStartSeats(agents, ['white'], 'expert', { random: 3, scripted: 1, never: 0 }, { switchSeats: false, rng: r, episode }));
    expect(new Set(drawn.map((d) => d.players.white))).toEqual(new Set(['expert']));
    expect(new Set(drawn.map((d) => JSON.stringify(d.imitated)))).toEqual(new Set(['["white"]']));
    const random = drawn.filter((d) => d.players.black === 'random').length;
    expect(drawn.filter((d) => d.players.black === 'scripted').length).toBe(400 - random);
    expect(random / 400).toBeGreaterThan(0.65);
    expect(random / 400).toBeLessThan(0.85);
  });

  test('gomoku: only the imitated seat’s moves are learned, in games against the opponents (fixed seed)', { timeout: 120_000 }, async () => {
    // A tiny policy: what is checked is the demonstrations, not what is learned from them. The
    // manifest's own warm start is left out, so that each run's is exactly the one written here.
    const gomoku = templateEnvironment('gomoku');
    const manifest = gomoku.manifest as { training: Record<string, unknown> };
    const environment = { ...gomoku, manifest: { ...manifest, training: { ...manifest.training, warmStart: null } } };
    const run = async (warm: Record<string, unknown>) => {
      const sink = new MemorySink();
      const config = {
        environmentVersionId: 'gomoku-v1',
        training: { model: { layers: 1, width: 16, heads: 2, contextLength: 192 }, steps: 1, batchSize: 1, groupSize: 2, evalEpisodes: 0, warmStart: { from: 'bot', bot: 'expert', episodes: 8, steps: 1, ...warm } },
      };
      expect(await runJob(testAssignment({ config, environment }), sink, new JobControl())).toEqual({ outcome: 'succeeded', reason: '' });
      return { demonstrations: values(sink, 'warmstart/demonstrations')[0].value, logs: sink.items('logs').map((l) => l.message) };
    };
    const itself = await run({});
    const against = await run({ opponents: { random: 1 } });
    // Against itself the expert's games are long and both colours are imitated; against random it
    // wins in a few moves, and only its own moves are demonstrations.
    expect(against.demonstrations).toBeLessThan(itself.demonstrations / 3);
    expect(against.demonstrations).toBeGreaterThanOrEqual(8 * 5); // at least five moves to win each game
    expect(against.logs).toContainEqual(expect.stringMatching(/^warm start: SFT on \d+ demonstrations of bot "expert" against random 1, 1 steps of 32/));
    expect(itself.logs).toContainEqual(expect.stringMatching(/^warm start: SFT on \d+ demonstrations of bot "expert", 1 steps of 32/));

    // The same games seen through the board's 8 symmetries: 8 × the demonstrations.
    const augmented = await run({ opponents: { random: 1 }, augment: 'symmetries' });
    expect(augmented.demonstrations).toBe(8 * against.demonstrations);
    expect(augmented.logs).toContainEqual(expect.stringMatching(/^warm start: SFT on \d+ demonstrations of bot "expert" against random 1 \(with their symmetries\), 1 steps of 32/));
  });

  test('opponents that are not bots of the environment, opponents or symmetries an environment lacks, fail saying so', async () => {
    const gomoku = { environmentVersionId: 'gomoku-v1', training: { model: { layers: 1, width: 16, heads: 2, contextLength: 192 }, steps: 1, batchSize: 1, groupSize: 2, evalEpisodes: 0, warmStart: { from: 'bot', bot: 'expert', episodes: 2, steps: 1, opponents: { random: 1, scriptd: 1 } } } };
    expect(await runJob(testAssignment({ config: gomoku, environment: templateEnvironment('gomoku') }), new MemorySink(), new JobControl())).toEqual({
      outcome: 'failed',
      reason: 'warmStart.opponents: this environment has no bot "scriptd"; its bots: scripted, expert, random',
    });
    const bandit = (warm: Record<string, unknown>) => ({
      environmentVersionId: 'bandit-v1',
      training: { model: { layers: 1, width: 16, heads: 2, contextLength: 72 }, steps: 1, batchSize: 1, groupSize: 2, evalEpisodes: 0, warmStart: { from: 'bot', bot: 'oracle', episodes: 2, steps: 1, ...warm } },
    });
    expect(await runJob(testAssignment({ config: bandit({ opponents: { random: 1 } }) }), new MemorySink(), new JobControl())).toEqual({
      outcome: 'failed',
      reason: 'warmStart.opponents: this environment has one agent; opponents play the other seats of a multi-agent one',
    });
    expect(await runJob(testAssignment({ config: bandit({ augment: 'symmetries' }) }), new MemorySink(), new JobControl())).toEqual({
      outcome: 'failed',
      reason: 'warmStart.augment: this environment defines no symmetries (the `symmetries` of its definition)',
    });
  });
});
