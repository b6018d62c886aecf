/**
 * A TRAIN job from an imported pretrained model (the qwen2-chat fixture, as the server hands its
 * files to a worker): fetched once into the worker's model cache, GRPO with LoRA through its chat
 * template raises the reward of a verifiable task (answer with a number), checkpoints hold the adapters and name the
 * base instead of copying it (with a KL penalty, the reference too), a resumed attempt continues
 * exactly as the uninterrupted run, a
 * checkpoint of the same model plays a seat as a frozen opponent, and the playground's session
 * serves the trained checkpoint through the model's chat template.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testBackend } from '../test-support/engine/test-setup';
import { testAssignment as assignment } from '../test-support/job-runner/assignments';
import { type Assignment, type SampleRequest } from '../../sdk/worker-protocol';
import { CheckpointStore } from './checkpoints';
import { InferenceChannel, type InferenceEvent } from './inference-channel';
import { baseModelLoader } from './model-cache';
import { runJob } from './run-job';
import { JobControl, MemorySink } from './sink';

const CHAT = path.join(__dirname, '../engine/pretrained/fixtures/qwen2-chat');
const FILES = ['chat_template.jinja', 'config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];
let cache: string;
let fetches = 0;

/** The model as the server's assignment names it, its files in the sink's blobs. */
function withModel(sink: MemorySink): NonNullable<Assignment['baseModel']> {
  const files = FILES.map((p) => {
    const bytes = fs.readFileSync(path.join(CHAT, p));
    const storageKey = `model-files/${createHash('sha256').update(bytes).digest('hex')}`;
    sink.blobs.set(storageKey, new Uint8Array(bytes));
    return { path: p, storageKey, bytes: bytes.length };
  });
  const fetch = sink.fetchBlob.bind(sink);
  sink.fetchBlob = async (key) => {
    if (key.startsWith('model-files/')) fetches++;
    return fetch(key);
  };
  return { modelId: 'model-1', contentHash: createHash('sha256').update(FILES.join()).digest('hex'), files };
}

/** A verifiable single-turn task the untrained model rarely solves: a reply with a digit in it. */
const numbers: NonNullable<Assignment['environment']> = {
  versionId: 'numbers-v1',
  entry: 'env.ts',
  files: {
    'env.ts': `import { defineSingleTurn } from 'whetstone';
export default defineSingleTurn<{ q: string }>({
  name: 'numbers',
  description: 'Answer with a number.',
  systemPrompt: '',
  sample: (rng) => ({ q: rng.pick(['How many legs has a cat?', 'Pick a number.', 'What is 2 + 3?', 'How old are you?']) }),
  prompt: (task) => task.q,
  reward: (_prompt, completion) => ({ reward: /\\d/.test(completion) ? 1 : 0, info: {} }),
});
`,
  },
  manifest: {
    name: 'numbers', version: '1.0.0', description: 'Answer with a number.', kind: 'single-turn', entry: 'env.ts', agents: ['agent'],
    limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 2 },
    training: { algorithm: 'grpo' },
  },
};

/** Two seats that each name a number in turn: a seat scores when its reply has a digit in it. */
const duel: NonNullable<Assignment['environment']> = {
  versionId: 'duel-v1',
  entry: 'env.ts',
  files: {
    'env.ts': `import { defineMultiAgentEnvironment } from 'whetstone';
export default defineMultiAgentEnvironment<undefined, number, 'first' | 'second'>({
  name: 'duel',
  description: 'Each seat names a number.',
  agents: ['first', 'second'],
  systemPrompt: '',
  sample: () => undefined,
  reset: (ctx) => {
    ctx.state = 0;
    return { agent: 'first', observation: 'Pick a number.' };
  },
  step: (action, ctx) => {
    const reward = /\\d/.test(action) ? 1 : 0;
    if (ctx.state++ === 0) return { rewards: { first: reward }, terminated: false, next: { agent: 'second', observation: 'Pick another number.' } };
    return { rewards: { second: reward }, terminated: true };
  },
});
`,
  },
  manifest: {
    name: 'duel', version: '1.0.0', description: 'Each seat names a number.', kind: 'multi-agent', entry: 'env.ts', agents: ['first', 'second'],
    limits: { maxTurns: 2, maxTokensPerTurn: 2, maxResponseTokens: 4 },
    training: { algorithm: 'grpo' },
  },
};

const config = {
  environmentVersionId: 'numbers-v1',
  baseModelId: 'model-1',
  training: { steps: 10, batchSize: 8, groupSize: 8, checkpointEvery: 5, learningRate: 0.02, evalEpisodes: 0, model: { contextLength: 96 } },
};

beforeAll(async () => {
  await testBackend();
  cache = fs.mkdtempSync(path.join(os.tmpdir(), 'model-cache-'));
  process.env.WHETSTONE_MODEL_CACHE = cache;
});
afterAll(() => {
  delete process.env.WHETSTONE_MODEL_CACHE;
  fs.rmSync(cache, { recursive: true, force: true });
});

describe('a run from an imported pretrained model', () => {
  let full: MemorySink;

  beforeAll(async () => {
    full = new MemorySink();
    const result = await runJob(assignment({ config, environment: numbers, baseModel: withModel(full) }), full, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
  });

  test('learns with LoRA through the chat template; the model is fetched once', () => {
    const reward = full.items('metrics').filter((m) => m.key === 'reward/mean');
    const first = reward.slice(0, 2).reduce((a, m) => a + m.value, 0) / 2;
    const last = reward.slice(-2).reduce((a, m) => a + m.value, 0) / 2;
    expect(last).toBeGreaterThan(first + 0.3);
    expect(fetches).toBe(FILES.length);
    expect(fs.readdirSync(cache)).toHaveLength(1);
    const logs = full.items('logs').map((l) => l.message);
    expect(logs.some((m) => /starting from imported model model-1 \(qwen2, \d+ parameters, fetched to this worker\)/.test(m))).toBe(true);
    expect(logs.some((m) => /LoRA: rank 8, alpha 16 on attn, mlp/.test(m))).toBe(true);
    // The rollouts are in the model's chat format.
    const sample = full.items('rollouts')[0];
    expect(sample.segments.map((s) => s.text).join('')).toMatch(/^system\nYou are a helpful assistant\.\nuser\n(How|Pick|What)[^\n]*\nassistant\n/);
  });

  test('checkpoints hold the adapters and name the base; one loads on the cached model', async () => {
    for (const c of full.checkpoints) {
      const buf = Buffer.from(c.bytes);
      const header = JSON.parse(buf.subarray(8, 8 + Number(buf.readBigUInt64LE(0))).toString()) as Record<string, unknown> & { __metadata__: Record<string, string> };
      const tensors = Object.keys(header).filter((k) => k !== '__metadata__');
      // Adapters (and their optimiser moments), no weight of the base.
      expect(tensors.filter((k) => !k.startsWith('lora.') && !k.startsWith('optim.')), `${c.kind}@${c.step}`).toEqual([]);
      expect(header.__metadata__['whetstone.architecture']).toBe('pretrained');
      expect(JSON.parse(header.__metadata__['whetstone.model']).base).toEqual({ modelId: 'model-1', contentHash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    }
    const sampler = full.checkpoints.find((c) => c.kind === 'SAMPLER')!;
    const without = new CheckpointStore(full);
    await expect(without.load(sampler.storageKey)).rejects.toThrow(/is a checkpoint of the imported model model-1: it loads on that model/);
    const store = new CheckpointStore(full, baseModelLoader(assignment({ config, environment: numbers, baseModel: withModel(full) }), full));
    const loaded = await store.load(sampler.storageKey);
    expect(loaded.model.adapters.size).toBe(2 * 7);
    expect(loaded.tokenizer.kind).toBe('hf');
    loaded.model.dispose();
    [without, store].forEach((s) => s.dispose());
  });

  test('a resumed attempt continues exactly as the uninterrupted run', async () => {
    const resumed = new MemorySink();
    const baseModel = withModel(resumed);
    const at5 = full.checkpoints.find((c) => c.kind === 'TRAINING' && c.step === 5)!;
    resumed.blobs.set(at5.storageKey, at5.bytes);
    const result = await runJob(assignment({ config, environment: numbers, baseModel, attempt: 2, resumeFrom: { checkpointId: 'ckpt-5', storageKey: at5.storageKey, step: 5 } }), resumed, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    const series = (sink: MemorySink) => sink.items('metrics').filter((m) => m.step > 5 && ['reward/mean', 'loss/total', 'optim/grad_norm'].includes(m.key)).map((m) => `${m.step}:${m.key}:${m.value}`);
    expect(series(resumed)).toEqual(series(full));
  });

  test('with LoRA and a KL penalty, checkpoints keep the reference as its adapters, and a resumed attempt continues exactly', async () => {
    const kl = { ...config, training: { ...config.training, steps: 4, checkpointEvery: 2, klCoef: 0.5 } };
    const straight = new MemorySink();
    expect(await runJob(assignment({ config: kl, environment: numbers, baseModel: withModel(straight) }), straight, new JobControl())).toEqual({ outcome: 'succeeded', reason: '' });
    const at2 = straight.checkpoints.find((c) => c.kind === 'TRAINING' && c.step === 2)!;
    const buf = Buffer.from(at2.bytes);
    const header = JSON.parse(buf.subarray(8, 8 + Number(buf.readBigUInt64LE(0))).toString()) as Record<string, unknown> & { __metadata__: Record<string, string> };
    const tensors = Object.keys(header).filter((k) => k !== '__metadata__');
    // The policy's adapters, their moments, and the reference's adapters: no weight of the base, twice or once.
    expect(tensors.filter((k) => !/^(lora|optim|reference\.lora)\./.test(k))).toEqual([]);
    expect(tensors.filter((k) => k.startsWith('reference.lora.'))).toHaveLength(tensors.filter((k) => k.startsWith('lora.')).length);
    expect(JSON.parse(header.__metadata__['whetstone.reference'])).toMatchObject({ lora: { rank: 8, alpha: 16 } });

    const resumed = new MemorySink();
    const baseModel = withModel(resumed);
    resumed.blobs.set(at2.storageKey, at2.bytes);
    const result = await runJob(assignment({ config: kl, environment: numbers, baseModel, attempt: 2, resumeFrom: { checkpointId: 'ckpt-2', storageKey: at2.storageKey, step: 2 } }), resumed, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    const series = (sink: MemorySink) => sink.items('metrics').filter((m) => m.step > 2 && ['reward/mean', 'loss/total', 'policy/kl', 'optim/grad_norm'].includes(m.key)).map((m) => `${m.step}:${m.key}:${m.value}`);
    // The KL term is in play (the policy has moved from its reference by step 3), and continues as uninterrupted.
    expect(straight.items('metrics').some((m) => m.key === 'policy/kl' && m.step > 2 && m.value !== 0)).toBe(true);
    expect(series(resumed)).toEqual(series(straight));
  });

  test('a checkpoint of the same model is a frozen opponent: it plays its seat in training and in an evaluation', async () => {
    const sampler = full.checkpoints.find((c) => c.kind === 'SAMPLER')!;
    const sink = new MemorySink();
    const baseModel = withModel(sink);
    sink.blobs.set(sampler.storageKey, sampler.bytes);
    const training = { steps: 2, batchSize: 2, groupSize: 2, evalEpisodes: 0, warmStart: null, learners: ['first'], switchSeats: false, opponents: { 'checkpoint:c1': 1 }, model: { contextLength: 96 } };
    const trained = await runJob(
      assignment({ config: { environmentVersionId: 'duel-v1', baseModelId: 'model-1', training }, environment: duel, baseModel, blobKeys: { c1: sampler.storageKey } }),
      sink,
      new JobControl(),
    );
    expect(trained).toEqual({ outcome: 'succeeded', reason: '' });
    expect(sink.items('logs').map((l) => l.message)).toContainEqual(expect.stringMatching(/^opponent checkpoint:c1: \d+ parameters, frozen$/));
    const matches = sink.items('matches');
    expect(matches.length).toBeGreaterThan(0);
    for (const m of matches) {
      expect(m.agents).toEqual([{ name: 'first', policy: 'policy' }, { name: 'second', policy: 'checkpoint:c1' }]);
      // The checkpoint wrote its seat's reply itself (not a bot).
      expect(m.moves.some((move) => move.agent === 'second' && !move.byBot)).toBe(true);
    }

    // An evaluation of the run's checkpoint against the same opponent, both on the imported model.
    const own = sink.checkpoints.find((c) => c.kind === 'SAMPLER')!;
    const evalSink = new MemorySink();
    const evalModel = withModel(evalSink);
    evalSink.blobs.set(own.storageKey, own.bytes);
    evalSink.blobs.set(sampler.storageKey, sampler.bytes);
    const evaluated = await runJob(
      assignment({
        kind: 'EVAL', environment: duel, baseModel: evalModel, blobKeys: { c2: own.storageKey, c1: sampler.storageKey },
        config: { checkpointId: 'c2', baseModelId: 'model-1', environmentVersionId: 'duel-v1', against: { checkpointId: 'c1' }, games: 4 },
      }),
      evalSink,
      new JobControl(),
    );
    expect(evaluated).toEqual({ outcome: 'succeeded', reason: '' });
    const games = evalSink.items('matches');
    expect(games).toHaveLength(4);
    expect(games.every((m) => m.agents.some((a) => a.policy === 'checkpoint:c1'))).toBe(true);
  });

  /** One request to an INFERENCE session of this assignment: every event it sent, and its end; the session is then cancelled. */
  async function serveOne(a: Assignment, sink: MemorySink, request: Omit<SampleRequest, 'requestId' | 'attemptId'>) {
    const events: InferenceEvent[] = [];
    const channel = new InferenceChannel((e) => void events.push(e));
    const control = new JobControl();
    channel.push({ requestId: 'r1', attemptId: 'att-1', ...request });
    const session = runJob(a, sink, control, { inference: channel });
    await expect.poll(() => events.find((e) => e.type === 'done'), { timeout: 60_000 }).toBeTruthy();
    control.cancel();
    expect(await session).toMatchObject({ outcome: 'cancelled' });
    const done = events.find((e) => e.type === 'done')!;
    if (done.type !== 'done') throw new Error('no answer');
    expect(done.done.error).toBeUndefined();
    return { events, done: done.done };
  }

  test('the playground serves the trained checkpoint: a chat through the template, answered with a number', async () => {
    const sink = new MemorySink();
    const baseModel = withModel(sink);
    const sampler = full.checkpoints.find((c) => c.kind === 'SAMPLER')!;
    sink.blobs.set(sampler.storageKey, sampler.bytes);
    const { done } = await serveOne(
      assignment({ kind: 'INFERENCE', config: { checkpointId: 'ckpt-s', baseModelId: 'model-1', idleSeconds: 10 }, environment: null, baseModel, blobKeys: { 'ckpt-s': sampler.storageKey } }),
      sink,
      { prompt: '', chat: { system: '', messages: [{ role: 'user', text: 'Pick a number.' }] }, maxTokens: 2, temperature: 0, alternatives: 0 },
    );
    expect(done.text).toMatch(/\d/);
  });

  test('a session serves the imported model itself (no checkpoint): each sampled token id with its log-probability', async () => {
    const sink = new MemorySink();
    const baseModel = withModel(sink);
    const { events, done } = await serveOne(assignment({ kind: 'INFERENCE', config: { baseModelId: 'model-1', idleSeconds: 10 }, environment: null, baseModel }), sink, {
      prompt: 'The cat', maxTokens: 6, temperature: 0, alternatives: 0,
    });
    expect(done.tokens.length).toBeGreaterThan(0);
    expect(done.tokens.every((t) => t.logprob <= 0 && Number.isInteger(t.id))).toBe(true);
    // The ids are what was sampled: decoded with the model's tokenizer they give the text sent.
    const { tokenizer } = await baseModelLoader(assignment({ kind: 'INFERENCE', config: {}, environment: null, baseModel }), sink)(baseModel, { valueHead: false });
    expect(tokenizer.decode(done.tokens.map((t) => t.id))).toBe(done.text);
    // The text also streamed token by token, as the playground shows it.
    expect(events.filter((e) => e.type === 'token').map((e) => (e.type === 'token' ? e.token.text : '')).join('')).toBe(done.text);
  });
});
