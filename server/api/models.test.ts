/**
 * Importing pretrained models: `whetstone models import` sends a Hugging Face folder, the server
 * checks it whole in the engine's inspect process and keeps it content-addressed; every refusal
 * names the file and the reason and leaves nothing behind (no row, no blob, no staging folder); a
 * removed model takes along the files no other model has.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../sdk/cli/errors';
import { runCapture } from '../../sdk/test-support/cli/test-io';
import { CHAT_MODEL, copyChatModel } from '../test-support/model-fixture';
import { FsBlobStore } from '../blobs/store';
import { sessionClient } from '../test-support/trpc-client';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { addMember, createUserWithTeam, startTestServer } from '../test-support/test-server';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

let t: TestDatabase;
let server: Awaited<ReturnType<typeof startTestServer>>;
let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
let env: Record<string, string>;
let home: string;
const dirs: string[] = [];

const api = (cookie: string) => sessionClient(server.url, cookie);
const cli = (argv: string[]) => runCapture(argv, { env, cwd: REPO });

/** A copy of the chat fixture, without its test expectations. */
function folder(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'model-import-'));
  dirs.push(dir);
  return copyChatModel(dir);
}

/** Whatever the blob store holds under model-files/ and .staging/: nothing may be left by a refusal. */
function storedFiles(): string[] {
  const list = (dir: string): string[] => (fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name)) : []);
  return [...list(path.join(server.blobRoot, 'model-files')), ...list(path.join(server.blobRoot, '.staging'))];
}

beforeAll(async () => {
  t = await createTestDatabase();
  server = await startTestServer(t.db, { databaseUrl: t.url });
  owner = await createUserWithTeam(server.url, t.db);
  const apiKey = (await api(owner.cookie).apiKeys.create.mutate({ teamId: owner.team.id, name: 'models test' })).key;
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-cli-'));
  env = { WHETSTONE_URL: server.url, WHETSTONE_API_KEY: apiKey, WHETSTONE_HOME: home };
});

afterAll(async () => {
  await server?.close();
  await t?.drop();
  for (const d of [...dirs, home]) if (d) fs.rmSync(d, { recursive: true, force: true });
});

describe('importing a pretrained model', () => {
  it('refuses a broken folder naming the file and the reason, keeping nothing', async () => {
    const dir = folder();
    // A template that fails to render is found only by the server's check, after every byte arrived.
    fs.writeFileSync(path.join(dir, 'chat_template.jinja'), "{{ raise_exception('templates are hard') }}");
    const refused = await cli(['models', 'import', dir, '--name', 'broken']);
    expect(refused.code).not.toBe(EXIT.OK);
    expect(refused.stderr).toMatch(/chat template: it fails to render \(templates are hard\)/);
    expect(storedFiles()).toEqual([]);
    expect(await t.db.pretrainedModel.count()).toBe(0);

    // A shard the index lists but the folder lacks: refused before anything is sent.
    const sharded = folder();
    fs.renameSync(path.join(sharded, 'model.safetensors'), path.join(sharded, 'model-00001-of-00002.safetensors'));
    fs.writeFileSync(path.join(sharded, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { 'model.norm.weight': 'model-00001-of-00002.safetensors', 'lm_head.weight': 'model-00002-of-00002.safetensors' } }));
    const missing = await cli(['models', 'import', sharded, '--name', 'sharded']);
    expect(missing.stderr).toMatch(/lists shard "model-00002-of-00002\.safetensors", which is not in the folder/);
    expect(storedFiles()).toEqual([]);
  });

  it('imports a Hugging Face folder with the CLI, describes it, and stores each file once', async () => {
    const imported = await cli(['models', 'import', folder(), '--name', 'tiny-qwen', '--json']);
    expect(imported.code, imported.stderr).toBe(EXIT.OK);
    const { model } = JSON.parse(imported.stdout) as { model: { id: string; family: string; contextLength: number; vocabSize: number; hasChatTemplate: boolean; files: string[] } };
    expect(model).toMatchObject({ family: 'qwen2', contextLength: 256, vocabSize: 320, hasChatTemplate: true });
    const row = await t.db.pretrainedModel.findUniqueOrThrow({ where: { id: model.id } });
    const files = row.files as { path: string; storageKey: string; sha256: string }[];
    expect(files.map((f) => f.path)).toEqual(model.files);
    for (const f of files) {
      const stored = fs.readFileSync(path.join(server.blobRoot, f.storageKey));
      expect(createHash('sha256').update(stored).digest('hex')).toBe(f.sha256);
      expect(stored.equals(fs.readFileSync(path.join(CHAT_MODEL, f.path)))).toBe(true);
    }
    // The same weights under another name: a second model, no second copy of any file.
    const before = storedFiles().length;
    const again = await cli(['models', 'import', folder(), '--name', 'tiny-qwen-2', '--json']);
    expect(again.code, again.stderr).toBe(EXIT.OK);
    expect(storedFiles().length).toBe(before);
    expect((await t.db.pretrainedModel.findFirstOrThrow({ where: { name: 'tiny-qwen-2' } })).contentHash).toBe(row.contentHash);
    // A name taken is refused before the upload.
    const taken = await cli(['models', 'import', folder(), '--name', 'tiny-qwen']);
    expect(taken.stderr).toMatch(/already has a model named "tiny-qwen"/);

    const list = await cli(['models', 'list']);
    expect(list.stdout).toMatch(/tiny-qwen\s+qwen2\s+0\.\d+ M\s+256\s+320\s+yes/);
  });

  it('checks every chunk against what was announced, and keeps uploads to their team', async () => {
    const owners = api(owner.cookie);
    const config = fs.readFileSync(path.join(CHAT_MODEL, 'config.json'));
    const sha256 = createHash('sha256').update(config).digest('hex');
    const { uploadId } = await owners.models.beginImport.mutate({ teamId: owner.team.id, name: 'partial', files: [{ path: 'config.json', bytes: config.length, sha256 }] });
    await expect(owners.models.uploadChunk.mutate({ teamId: owner.team.id, uploadId, path: 'tokenizer.json', offset: 0, data: 'e30=' })).rejects.toThrow(/"tokenizer\.json" was not announced/);
    await expect(owners.models.uploadChunk.mutate({ teamId: owner.team.id, uploadId, path: 'config.json', offset: 10, data: 'e30=' })).rejects.toThrow(/would leave a gap/);
    await owners.models.uploadChunk.mutate({ teamId: owner.team.id, uploadId, path: 'config.json', offset: 0, data: config.subarray(0, 100).toString('base64') });
    await expect(owners.models.finishImport.mutate({ teamId: owner.team.id, uploadId })).rejects.toThrow(/"config\.json" arrived with 100 of its \d+ bytes/);
    // Finishing, even refused, ends the upload.
    await expect(owners.models.uploadChunk.mutate({ teamId: owner.team.id, uploadId, path: 'config.json', offset: 100, data: 'e30=' })).rejects.toThrow(/No such upload/);

    // Another team's member cannot see or write an upload, or read a model.
    const other = await createUserWithTeam(server.url, t.db);
    const { uploadId: mine } = await owners.models.beginImport.mutate({ teamId: owner.team.id, name: 'mine', files: [{ path: 'config.json', bytes: config.length, sha256 }] });
    await expect(api(other.cookie).models.uploadChunk.mutate({ teamId: other.team.id, uploadId: mine, path: 'config.json', offset: 0, data: 'e30=' })).rejects.toThrow(/No such upload/);
    const model = await t.db.pretrainedModel.findFirstOrThrow({ where: { teamId: owner.team.id } });
    await expect(api(other.cookie).models.get.query({ teamId: other.team.id, modelId: model.id })).rejects.toThrow(/No such model/);
    await owners.models.abandonImport.mutate({ teamId: owner.team.id, uploadId: mine });
    expect(storedFiles().filter((f) => f.includes('.staging'))).toEqual([]);

    // A team has at most three imports under way.
    const opened = [];
    for (let i = 0; i < 3; i++) opened.push((await owners.models.beginImport.mutate({ teamId: owner.team.id, name: `open-${i}`, files: [{ path: 'config.json', bytes: config.length, sha256 }] })).uploadId);
    await expect(owners.models.beginImport.mutate({ teamId: owner.team.id, name: 'one-too-many', files: [{ path: 'config.json', bytes: config.length, sha256 }] })).rejects.toThrow(/3 imports under way \(at most 3\)/);
    for (const id of opened) await owners.models.abandonImport.mutate({ teamId: owner.team.id, uploadId: id });

    // A viewer may look, not import.
    const viewer = await addMember(server.url, t.db, owner.team.id, 'VIEWER');
    expect((await api(viewer.cookie).models.list.query({ teamId: owner.team.id })).length).toBe(2);
    await expect(api(viewer.cookie).models.beginImport.mutate({ teamId: owner.team.id, name: 'nope', files: [{ path: 'config.json', bytes: 1, sha256 }] })).rejects.toThrow(/MEMBER/i);
  });

  it('a run from a model asks for its memory; a checkpoint of it brings the model to a run, an evaluation or the playground', async () => {
    const owners = api(owner.cookie);
    const teamId = owner.team.id;
    const model = await t.db.pretrainedModel.findFirstOrThrow({ where: { teamId, name: 'tiny-qwen' } });
    const { datasetVersionId } = { datasetVersionId: (await owners.datasets.upload.mutate({ teamId, name: 'chats', jsonl: '{"prompt": "Pick a number.", "completion": "7"}\n' })).versionId };
    const sft = await owners.jobs.submit.mutate({ teamId, kind: 'SFT', config: { datasetVersionId, baseModelId: model.id, training: { algorithm: 'sft', steps: 1 } } });
    const job = await t.db.job.findUniqueOrThrow({ where: { id: sft.id } });
    expect(Number(job.memoryBytes)).toBeGreaterThan(4 * (model.card as { parameters: number }).parameters);
    await expect(owners.jobs.submit.mutate({ teamId, kind: 'SFT', config: { datasetVersionId, baseModelId: 'no-such-model' } })).rejects.toThrow(/No such model in this team/);

    const checkpoint = await t.db.checkpoint.create({ data: { teamId, jobId: job.id, kind: 'SAMPLER', step: 1, storageKey: `checkpoints/${'d'.repeat(64)}`, bytes: 1n, sha256: 'd'.repeat(64) } });
    const session = await owners.inference.open.mutate({ teamId, checkpointId: checkpoint.id });
    expect((await t.db.job.findUniqueOrThrow({ where: { id: session.jobId } })).config).toMatchObject({ checkpointId: checkpoint.id, baseModelId: model.id });
    const again = await owners.jobs.submit.mutate({ teamId, kind: 'SFT', config: { datasetVersionId, baseCheckpointId: checkpoint.id } });
    expect((await t.db.job.findUniqueOrThrow({ where: { id: again.id } })).config).toMatchObject({ baseModelId: model.id });
    // The CLI starts a run from a model by its name.
    const run = await cli(['run', 'env-templates/bandit', '--model', 'tiny-qwen', '--json']);
    expect(run.code, run.stderr).toBe(EXIT.OK);
    const submitted = await t.db.job.findFirstOrThrow({ where: { teamId, kind: 'TRAIN' }, orderBy: { queuedAt: 'desc' } });
    expect(submitted.config).toMatchObject({ baseModelId: model.id });
    expect((await cli(['run', 'env-templates/bandit', '--model', 'no-such'])).stderr).toMatch(/no imported model named no-such in this team: (tiny-qwen-2, tiny-qwen|tiny-qwen, tiny-qwen-2)/);
    // A checkpoint of the engine's own GPT with a model besides: refused, as the worker could honour only one.
    const gptJob = await t.db.job.create({ data: { teamId, ownerId: job.ownerId, kind: 'SFT', state: 'SUCCEEDED', config: { datasetVersionId } } });
    const gpt = await t.db.checkpoint.create({ data: { teamId, jobId: gptJob.id, kind: 'SAMPLER', step: 1, storageKey: `checkpoints/${'e'.repeat(64)}`, bytes: 1n, sha256: 'e'.repeat(64) } });
    await expect(owners.jobs.submit.mutate({ teamId, kind: 'SFT', config: { datasetVersionId, baseCheckpointId: gpt.id, baseModelId: model.id } })).rejects.toThrow(/is not of an imported model: start from the checkpoint or from the model/);
    // A frozen opponent plays on the job's model: a checkpoint of another one is refused, naming both.
    const bandit = await t.db.environmentVersion.findFirstOrThrow({ where: { environment: { teamId, name: 'bandit' } } });
    await expect(owners.jobs.submit.mutate({ teamId, kind: 'EVAL', config: { checkpointId: checkpoint.id, environmentVersionId: bandit.id, against: { checkpointId: gpt.id } } })).rejects.toThrow(
      new RegExp(`checkpoint ${gpt.id} is of the engine's own model and this job's policy is of imported model ${model.id}`),
    );
    await expect(owners.jobs.submit.mutate({ teamId, kind: 'TRAIN', config: { environmentVersionId: bandit.id, training: { opponents: { [`checkpoint:${checkpoint.id}`]: 1 } } } })).rejects.toThrow(
      new RegExp(`checkpoint ${checkpoint.id} is of imported model ${model.id} and this job's policy is of the engine's own model`),
    );
    // Removing a model a queued job starts from is refused until that job is gone.
    await expect(owners.models.remove.mutate({ teamId, modelId: model.id })).rejects.toThrow(/queued or running jobs? starts? from tiny-qwen/);
  });

  it('says what a checkpoint holds, from its own header: adapters on an imported model, or every weight', async () => {
    const owners = api(owner.cookie);
    const teamId = owner.team.id;
    const model = await t.db.pretrainedModel.findFirstOrThrow({ where: { teamId, name: 'tiny-qwen' } });
    const blobs = new FsBlobStore(server.blobRoot);
    // A checkpoint file as the engine writes it (gpu-worker/engine/checkpoint.ts): its metadata, then a tensor's bytes.
    const checkpointWith = async (meta: Record<string, string>, tensor = 'lora.x.a') => {
      const json = Buffer.from(JSON.stringify({ __metadata__: meta, [tensor]: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }));
      const length = Buffer.alloc(8);
      length.writeBigUInt64LE(BigInt(json.length));
      const stored = await blobs.put(Buffer.concat([length, json, Buffer.alloc(4)]), 'checkpoints');
      return (await t.db.checkpoint.create({ data: { teamId, kind: 'SAMPLER', step: 1, storageKey: stored.key, bytes: BigInt(stored.bytes), sha256: stored.sha256 } })).id;
    };
    const pretrained = { 'whetstone.architecture': 'pretrained', 'whetstone.model': JSON.stringify({ base: { modelId: model.id, contentHash: model.contentHash }, config: {}, valueHead: false }) };
    const adapters = await checkpointWith({ ...pretrained, 'whetstone.lora': JSON.stringify({ rank: 4, alpha: 8, targets: ['attn'], seed: 0 }) });
    expect(await owners.runs.checkpointContents.query({ teamId, checkpointId: adapters })).toEqual({
      architecture: 'pretrained', lora: { rank: 4, alpha: 8, targets: ['attn'] }, model: { id: model.id, name: 'tiny-qwen' }, shape: null, allWeights: false,
    });
    const full = await checkpointWith(pretrained, 'model.model.norm.weight');
    expect(await owners.runs.checkpointContents.query({ teamId, checkpointId: full })).toMatchObject({ architecture: 'pretrained', lora: null, allWeights: true });
    const gpt = await checkpointWith({ 'whetstone.model': JSON.stringify({ vocabSize: 70, contextLength: 256, layers: 2, width: 64, heads: 4, dropout: 0 }) });
    expect(await owners.runs.checkpointContents.query({ teamId, checkpointId: gpt })).toEqual({ architecture: 'gpt', lora: null, model: null, shape: { layers: 2, width: 64, heads: 4, contextLength: 256 }, allWeights: true });
    // Another team's checkpoint is not found; a file that is not a checkpoint says so.
    const other = await createUserWithTeam(server.url, t.db);
    await expect(api(other.cookie).runs.checkpointContents.query({ teamId: other.team.id, checkpointId: gpt })).rejects.toThrow(/No such checkpoint/);
    const junk = await blobs.put(Buffer.from('not a checkpoint at all'), 'checkpoints');
    const broken = await t.db.checkpoint.create({ data: { teamId, kind: 'SAMPLER', step: 2, storageKey: junk.key, bytes: BigInt(junk.bytes), sha256: junk.sha256 } });
    await expect(owners.runs.checkpointContents.query({ teamId, checkpointId: broken.id })).rejects.toThrow(/cannot be read/);
  });

  it('removing a model removes those of its files no other model has', async () => {
    const owners = api(owner.cookie);
    const teamId = owner.team.id;
    const first = await t.db.pretrainedModel.findFirstOrThrow({ where: { teamId, name: 'tiny-qwen' } });
    const second = await t.db.pretrainedModel.findFirstOrThrow({ where: { teamId, name: 'tiny-qwen-2' } });
    const kept = (first.files as { storageKey: string }[]).map((f) => path.join(server.blobRoot, f.storageKey));
    // The same files as tiny-qwen: removing one of the two keeps every file.
    await owners.models.remove.mutate({ teamId, modelId: second.id });
    expect(storedFiles().sort()).toEqual([...kept].sort());
    // Once the jobs that start from it have ended, the last model with these files takes them along.
    await t.db.job.updateMany({ where: { teamId, state: { in: ['QUEUED', 'ASSIGNED', 'RUNNING', 'PREEMPTED'] } }, data: { state: 'CANCELLED' } });
    await owners.models.remove.mutate({ teamId, modelId: first.id });
    expect(storedFiles()).toEqual([]);
    expect(await t.db.pretrainedModel.count({ where: { teamId } })).toBe(0);
  });
});
