/**
 * What leaves Whetstone of an imported model, through the CLI against a real server: a checkpoint
 * exported as a Hugging Face folder (merged weights that load with the policy's own logits, or a
 * PEFT adapter), downloaded as the browser's button downloads it; and `whetstone sample`, which
 * samples from the model itself or from a checkpoint through an inference session on a real
 * worker daemon, answering every token's id and log-probability — checked against the engine's
 * own computation of the same greedy continuation.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../sdk/cli/errors';
import { runCapture } from '../../sdk/test-support/cli/test-io';
import { saveSamplerCheckpoint } from '../../gpu-worker/engine/checkpoint';
import { attachLora } from '../../gpu-worker/engine/lora';
import { PretrainedDecoder } from '../../gpu-worker/engine/pretrained/decoder';
import { HfTokenizer } from '../../gpu-worker/engine/pretrained/hf-tokenizer';
import { Rng } from '../../gpu-worker/engine/rng';
import { neverSampled } from '../../gpu-worker/engine/sampler';
import { type Tokenizer } from '../../gpu-worker/engine/tokenizer';
import { chatPrompt } from '../../gpu-worker/runtime/rollout';
import { testBackend } from '../../gpu-worker/test-support/engine/test-setup';
import { FsBlobStore } from '../blobs/store';
import { CHAT_MODEL, copyChatModel } from '../test-support/model-fixture';
import { sessionClient } from '../test-support/trpc-client';
import { startWorker, stopGracefully, waitUntil, type Proc } from '../test-support/reliability/harness';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { addMember, createUserWithTeam, startTestServer } from '../test-support/test-server';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

let t: TestDatabase;
let server: Awaited<ReturnType<typeof startTestServer>>;
let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
let env: Record<string, string>;
const dirs: string[] = [];
let modelId: string;
/** The fine-tuned policy whose checkpoint the tests export and serve. */
let policy: PretrainedDecoder;
let tokenizer: Tokenizer;
let checkpointId: string;

const api = (cookie: string) => sessionClient(server.url, cookie);
const cli = (argv: string[]) => runCapture(argv, { env, cwd: REPO });
const tempDir = (prefix: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};

const lastLogits = (m: PretrainedDecoder, ids: number[]) => tf.tidy(() => m.forward([ids], { lastOnly: true }).logits.dataSync() as Float32Array);

/** The greedy continuation as the sampler takes it (never pad or BOS), with each token's log-probability. */
function greedy(m: PretrainedDecoder, tok: Tokenizer, prompt: number[], maxTokens: number): { id: number; logprob: number }[] {
  const banned = neverSampled(tok);
  const out: { id: number; logprob: number }[] = [];
  const ids = [...prompt];
  for (let s = 0; s < maxTokens; s++) {
    const logits = lastLogits(m, ids);
    let best = -1;
    for (let i = 0; i < logits.length; i++) if (!banned.has(i) && (best < 0 || logits[i] > logits[best])) best = i;
    if (best === tok.eos) break;
    let max = -Infinity;
    for (let i = 0; i < logits.length; i++) if (!banned.has(i)) max = Math.max(max, logits[i]);
    let sum = 0;
    for (let i = 0; i < logits.length; i++) if (!banned.has(i)) sum += Math.exp(logits[i] - max);
    out.push({ id: best, logprob: logits[best] - max - Math.log(sum) });
    ids.push(best);
  }
  return out;
}

beforeAll(async () => {
  await testBackend();
  t = await createTestDatabase();
  server = await startTestServer(t.db, { databaseUrl: t.url, tickMs: 100 });
  owner = await createUserWithTeam(server.url, t.db);
  const apiKey = (await api(owner.cookie).apiKeys.create.mutate({ teamId: owner.team.id, name: 'serve test' })).key;
  env = { WHETSTONE_URL: server.url, WHETSTONE_API_KEY: apiKey, WHETSTONE_HOME: tempDir('whetstone-cli-') };
  const folder = copyChatModel(tempDir('model-import-'));
  const imported = await cli(['models', 'import', folder, '--name', 'tiny-qwen', '--json']);
  expect(imported.code, imported.stderr).toBe(EXIT.OK);
  const model = await t.db.pretrainedModel.findFirstOrThrow({ where: { teamId: owner.team.id, name: 'tiny-qwen' } });
  modelId = model.id;

  // A LoRA fine-tune of it, as a run's sampler checkpoint (trained adapters are not zero).
  policy = await PretrainedDecoder.fromFolder(CHAT_MODEL, { base: { modelId, contentHash: model.contentHash } });
  attachLora(policy, { rank: 4, alpha: 8, targets: ['q', 'v', 'down'] });
  const rng = new Rng(5);
  for (const ad of policy.adapters.values()) ad.b.assign(tf.tensor(Array.from({ length: ad.b.size }, () => rng.normal() * 0.3), ad.b.shape));
  tokenizer = HfTokenizer.fromFolder(CHAT_MODEL, modelId);
  const file = path.join(tempDir('checkpoint-'), 'sampler.safetensors');
  await saveSamplerCheckpoint(file, policy, tokenizer);
  const stored = await new FsBlobStore(server.blobRoot).put(fs.readFileSync(file), 'checkpoints');
  const job = await t.db.job.create({ data: { teamId: owner.team.id, ownerId: owner.user.id, kind: 'TRAIN', state: 'SUCCEEDED', config: { environmentVersionId: 'v', baseModelId: modelId } } });
  checkpointId = (await t.db.checkpoint.create({ data: { teamId: owner.team.id, jobId: job.id, kind: 'SAMPLER', step: 12, storageKey: stored.key, bytes: BigInt(stored.bytes), sha256: stored.sha256 } })).id;
}, 120_000);

afterAll(async () => {
  policy?.dispose();
  await server?.close();
  await t?.drop();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe('exporting a checkpoint of an imported model', () => {
  it('merged: a Hugging Face folder whose weights give the fine-tuned policy\'s logits, with the base\'s tokenizer and template', async () => {
    const out = path.join(tempDir('export-'), 'agent');
    const res = await cli(['models', 'export', checkpointId, out, '--json']);
    expect(res.code, res.stderr).toBe(EXIT.OK);
    expect(res.json()).toMatchObject({ checkpointId, format: 'merged' });
    expect(fs.readdirSync(out).sort()).toEqual(['chat_template.jinja', 'config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    for (const f of ['tokenizer.json', 'chat_template.jinja']) expect(fs.readFileSync(path.join(out, f))).toEqual(fs.readFileSync(path.join(CHAT_MODEL, f)));
    const exported = await PretrainedDecoder.fromFolder(out);
    const ids = [1, 40, 60, 80, 100, 200, 2, 5];
    const want = lastLogits(policy, ids);
    const got = lastLogits(exported, ids);
    exported.dispose();
    expect(Math.max(...Array.from(want, (v, i) => Math.abs(v - got[i])))).toBeLessThan(1e-4);
    // The same export again is the one written before (kept on the server until a day unused).
    const again = await api(owner.cookie).models.exportCheckpoint.mutate({ teamId: owner.team.id, checkpointId });
    expect(again).toMatchObject({ name: 'tiny-qwen-step12-merged', download: `/api/exports/${checkpointId}/merged` });
    expect(fs.readdirSync(path.join(server.blobRoot, '.staging', 'exports')).filter((d) => d.startsWith(checkpointId))).toEqual([`${checkpointId}-merged`]);
  }, 120_000);

  it('peft: the adapters alone in PEFT\'s layout; the browser\'s download is a tar of the folder', async () => {
    const out = path.join(tempDir('export-'), 'adapter');
    const res = await cli(['models', 'export', checkpointId, out, '--format', 'peft']);
    expect(res.code, res.stderr).toBe(EXIT.OK);
    expect(res.stdout).toMatch(/PeftModel\.from_pretrained/);
    expect(fs.readdirSync(out)).toEqual(expect.arrayContaining(['adapter_config.json', 'adapter_model.safetensors', 'config.json', 'tokenizer.json']));
    expect(JSON.parse(fs.readFileSync(path.join(out, 'adapter_config.json'), 'utf8'))).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8, target_modules: ['q_proj', 'v_proj', 'down_proj'], base_model_name_or_path: 'tiny-qwen' });

    const download = await fetch(`${server.url}/api/exports/${checkpointId}/peft`, { headers: { cookie: owner.cookie } });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="tiny-qwen-step12-peft.tar"');
    const tar = Buffer.from(await download.arrayBuffer());
    // ustar: each entry's name in the header's first 100 bytes, under the export's folder.
    expect(tar.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '')).toMatch(/^tiny-qwen-step12-peft\//);
    expect(tar.includes(Buffer.from('tiny-qwen-step12-peft/adapter_model.safetensors'))).toBe(true);
  }, 120_000);

  it('refuses what cannot be exported and whoever may not, saying why', async () => {
    const teamId = owner.team.id;
    const gptJob = await t.db.job.create({ data: { teamId, ownerId: owner.user.id, kind: 'TRAIN', state: 'SUCCEEDED', config: { environmentVersionId: 'v' } } });
    const gpt = await t.db.checkpoint.create({ data: { teamId, jobId: gptJob.id, kind: 'SAMPLER', step: 1, storageKey: `checkpoints/${'e'.repeat(64)}`, bytes: 1n, sha256: 'e'.repeat(64) } });
    const refused = await cli(['models', 'export', gpt.id, path.join(tempDir('export-'), 'gpt')]);
    expect(refused.code).toBe(EXIT.REJECTED);
    expect(refused.stderr).toMatch(/engine's own model, which has no Hugging Face architecture/);
    expect((await cli(['models', 'export', 'no-such-checkpoint', path.join(tempDir('export-'), 'x')])).code).toBe(EXIT.NOT_FOUND);
    const full = tempDir('export-');
    fs.writeFileSync(path.join(full, 'keep.txt'), 'mine');
    const taken = await cli(['models', 'export', checkpointId, full]);
    expect(taken.code).toBe(EXIT.USAGE);
    expect(taken.stderr).toMatch(/exists and is not an empty folder/);
    expect(fs.readdirSync(full)).toEqual(['keep.txt']);

    // The download route: credentials, the team, the role.
    const route = `${server.url}/api/exports/${checkpointId}/merged`;
    expect((await fetch(route)).status).toBe(401);
    const stranger = await createUserWithTeam(server.url, t.db);
    expect((await fetch(route, { headers: { cookie: stranger.cookie } })).status).toBe(404);
    const viewer = await addMember(server.url, t.db, teamId, 'VIEWER');
    expect((await fetch(route, { headers: { cookie: viewer.cookie } })).status).toBe(403);
    await expect(api(viewer.cookie).models.exportCheckpoint.mutate({ teamId, checkpointId })).rejects.toThrow(/member role/i);
    expect((await fetch(`${server.url}/api/exports/${checkpointId}/gguf`, { headers: { cookie: owner.cookie } })).status).toBe(400);
    // A download serves an export written before and never starts one (a GET a link elsewhere could send).
    fs.rmSync(path.join(server.blobRoot, '.staging', 'exports', `${checkpointId}-merged`), { recursive: true });
    const unprepared = await fetch(route, { headers: { cookie: owner.cookie } });
    expect(unprepared.status).toBe(409);
    expect(((await unprepared.json()) as { error: string }).error).toMatch(/has no merged export yet .* export it first/);
  }, 60_000);
});

describe('whetstone sample', () => {
  let daemon: Proc;
  let cache: string;

  beforeAll(async () => {
    const { token } = await api(owner.cookie).workerTokens.create.mutate({ teamId: owner.team.id, name: 'serve test worker' });
    cache = tempDir('model-cache-');
    process.env.WHETSTONE_MODEL_CACHE = cache;
    daemon = startWorker({ url: server.url, token, name: 'serve-test', home: tempDir('whetstone-worker-'), backend: 'wasm' });
  });

  afterAll(async () => {
    delete process.env.WHETSTONE_MODEL_CACHE;
    if (daemon) await stopGracefully(daemon);
  });

  it('samples from the imported model itself: greedy ids and log-probabilities are the model\'s, the text their decoding', async () => {
    const res = await cli(['sample', 'tiny-qwen', '--prompt', 'The cat', '--greedy', '--max-tokens', '6', '--json']);
    if (res.code !== EXIT.OK) console.log(res.stderr, daemon.output());
    expect(res.code).toBe(EXIT.OK);
    const doc = res.json() as { jobId: string; text: string; tokens: { id: number; text: string; logprob: number }[]; reason: string };
    const base = await PretrainedDecoder.fromFolder(CHAT_MODEL);
    const want = greedy(base, tokenizer, tokenizer.prompt('The cat'), 6);
    base.dispose();
    expect(doc.tokens.map((x) => x.id)).toEqual(want.map((x) => x.id));
    doc.tokens.forEach((x, i) => expect(x.logprob).toBeCloseTo(want[i].logprob, 3));
    expect(doc.text).toBe(tokenizer.decode(doc.tokens.map((x) => x.id)));
    expect(doc.reason).toBe(want.length < 6 ? 'eos' : 'length');
    expect((await t.db.job.findUniqueOrThrow({ where: { id: doc.jobId } })).config).toMatchObject({ baseModelId: modelId, idleSeconds: 120 });
    // The model's own session is reused (not a checkpoint's of it).
    const again = await cli(['sample', 'tiny-qwen', '--prompt', 'A dog', '--max-tokens', '2', '--seed', '1']);
    expect(again.code, again.stderr).toBe(EXIT.OK);
    expect(again.stderr).toMatch(new RegExp(`inference session ${doc.jobId} \\(reused\\)`));
    // The session holds the worker's one device until it is idle: end it, as the note says how.
    expect((await cli(['cancel', doc.jobId])).code).toBe(EXIT.OK);
  }, 180_000);

  it('samples from a checkpoint through the chat template; a second sample reuses the session', async () => {
    const res = await cli(['sample', checkpointId, '--chat', '--prompt', 'Pick a number.', '--greedy', '--max-tokens', '5', '--json']);
    if (res.code !== EXIT.OK) console.log(res.stderr, daemon.output());
    expect(res.code).toBe(EXIT.OK);
    const doc = res.json() as { jobId: string; tokens: { id: number; logprob: number }[] };
    const want = greedy(policy, tokenizer, chatPrompt(tokenizer, '', [{ role: 'user', text: 'Pick a number.' }]), 5);
    expect(doc.tokens.map((x) => x.id)).toEqual(want.map((x) => x.id));

    const again = await cli(['sample', checkpointId, '--prompt', 'Hello', '--temperature', '0.7', '--seed', '3', '--max-tokens', '3']);
    expect(again.code, again.stderr).toBe(EXIT.OK);
    expect(again.stderr).toMatch(new RegExp(`inference session ${doc.jobId} \\(reused\\)`));
    expect(again.stderr).toMatch(/the session stays open until it is idle \(whetstone cancel/);
  }, 180_000);

  it('refuses bad flags before calling the server, and a session that cannot start is named', async () => {
    expect((await cli(['sample', 'tiny-qwen'])).stderr).toMatch(/sample needs --prompt/);
    expect((await cli(['sample', 'tiny-qwen', '--prompt', 'x', '--greedy', '--temperature', '1'])).code).toBe(EXIT.USAGE);
    expect((await cli(['sample', 'tiny-qwen', '--prompt', 'x', '--top-p', '1.5'])).stderr).toMatch(/--top-p must be/);
    const missing = await cli(['sample', 'no-such-thing', '--prompt', 'x']);
    expect(missing.code).toBe(EXIT.NOT_FOUND);
    expect(missing.stderr).toMatch(/No such checkpoint in this team/);
    await waitUntil('the daemon still online', async () => (await cli(['workers'])).stdout.includes('serve-test'), 10_000);
  }, 60_000);
});
