/**
 * `whetstone models import hf:<repo>[@revision]`: the server downloads the model from a hub (here a
 * local one that answers as huggingface.co does, test-support/fake-hub.ts) and imports it as an
 * uploaded folder is; every refusal names the repo and the reason and leaves nothing behind.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../sdk/cli/errors';
import { runCapture } from '../../sdk/test-support/cli/test-io';
import { transformer } from '../../sdk/transformer';
import type { AppRouter } from '../api/root';
import { folderFiles, startFakeHub } from '../test-support/fake-hub';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { addMember, createUserWithTeam, startTestServer } from '../test-support/test-server';
import { importFromHub } from './hub-import';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CHAT = path.join(REPO, 'gpu-worker/engine/pretrained/fixtures/qwen2-chat');
const TOKEN = 'hf_testtoken';

let t: TestDatabase;
let hub: Awaited<ReturnType<typeof startFakeHub>>;
let server: Awaited<ReturnType<typeof startTestServer>>;
let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
let env: Record<string, string>;
let home: string;

function api(cookie: string) {
  return createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${server.url}/api/trpc`, transformer, headers: () => ({ cookie, origin: server.url }) })] });
}
const cli = (argv: string[]) => runCapture(argv, { env, cwd: REPO });

/** What an import may leave on the server's volume: nothing in staging, whatever the outcome. */
function staged(): string[] {
  const dir = path.join(server.blobRoot, '.staging', 'models');
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

beforeAll(async () => {
  // The fixture folder as a hub repo holds it: with files that are not the model's beside it.
  const chat = folderFiles(CHAT);
  chat.set('README.md', Buffer.from('# qwen2-chat\n'));
  chat.set('.gitattributes', Buffer.from('*.safetensors filter=lfs diff=lfs merge=lfs -text\n'));
  const noTokenizer = new Map(chat);
  noTokenizer.delete('tokenizer.json');
  // The same weights as one shard with an index (the tensors' names read from the safetensors header).
  const sharded = new Map(chat);
  const weights = sharded.get('model.safetensors')!;
  sharded.delete('model.safetensors');
  sharded.set('model-00001-of-00001.safetensors', weights);
  const header = JSON.parse(weights.subarray(8, 8 + Number(weights.readBigUInt64LE(0))).toString('utf8')) as Record<string, unknown>;
  const weightMap = Object.fromEntries(Object.keys(header).filter((k) => k !== '__metadata__').map((k) => [k, 'model-00001-of-00001.safetensors']));
  sharded.set('model.safetensors.index.json', Buffer.from(JSON.stringify({ metadata: { total_size: weights.length }, weight_map: weightMap })));
  hub = await startFakeHub({
    'fixtures/qwen2-chat': { revisions: { main: chat, 'refs/pr/1': chat, sharded } },
    'fixtures/damaged': { revisions: { main: chat }, damaged: 'model.safetensors' },
    'fixtures/no-tokenizer': { revisions: { main: noTokenizer } },
    'fixtures/gated': { revisions: { main: chat }, token: TOKEN },
  });
  t = await createTestDatabase();
  server = await startTestServer(t.db, { hub: { endpoint: hub.url } });
  owner = await createUserWithTeam(server.url, t.db);
  const apiKey = (await api(owner.cookie).apiKeys.create.mutate({ teamId: owner.team.id, name: 'hub test' })).key;
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-cli-'));
  env = { WHETSTONE_URL: server.url, WHETSTONE_API_KEY: apiKey, WHETSTONE_HOME: home };
});

afterAll(async () => {
  await server?.close();
  await hub?.close();
  await t?.drop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe('importing a model from the Hugging Face hub', () => {
  it('refuses a repo, revision or tree it cannot import, naming the repo and the reason, and keeps nothing', async () => {
    const teamId = owner.team.id;
    const owners = api(owner.cookie);
    await expect(owners.models.importFromHub.mutate({ teamId, repo: 'fixtures/no-such-model' })).rejects.toThrow('hf:fixtures/no-such-model@main: no such model repo on ' + hub.url);
    await expect(owners.models.importFromHub.mutate({ teamId, repo: 'fixtures/qwen2-chat', revision: 'v9' })).rejects.toThrow('hf:fixtures/qwen2-chat@v9: the repo has no revision "v9"');
    await expect(owners.models.importFromHub.mutate({ teamId, repo: 'fixtures/no-tokenizer' })).rejects.toThrow(/hf:fixtures\/no-tokenizer@main: the repo has no tokenizer\.json/);
    // Gated: the listing is public, the files are not; refused at the first file, after staging began.
    await expect(owners.models.importFromHub.mutate({ teamId, repo: 'fixtures/gated' })).rejects.toThrow(/hf:fixtures\/gated@main is gated: .*set HF_TOKEN on the server/);
    await expect(owners.models.importFromHub.mutate({ teamId, repo: '../etc' })).rejects.toThrow(/owner\/name/);
    // Weights that do not hash to the hub's sha256 of them: refused after the download.
    await expect(owners.models.importFromHub.mutate({ teamId, repo: 'fixtures/damaged' })).rejects.toThrow('hf:fixtures/damaged@main: "model.safetensors" arrived damaged');
    expect(staged()).toEqual([]);
    expect(await t.db.pretrainedModel.count()).toBe(0);

    // A viewer may not import.
    const viewer = await addMember(server.url, t.db, teamId, 'VIEWER');
    await expect(api(viewer.cookie).models.importFromHub.mutate({ teamId, repo: 'fixtures/qwen2-chat' })).rejects.toThrow(/MEMBER/i);
  });

  it('says when the server cannot reach HF_ENDPOINT, and reads a gated repo with HF_TOKEN', async () => {
    const input = { teamId: owner.team.id, userId: owner.user.id, repo: 'fixtures/gated', revision: 'main', name: 'gated' };
    // A port nothing listens on: a hub that was there and is gone.
    const gone = await startFakeHub({});
    await gone.close();
    await expect(importFromHub(t.db, server.blobs, { endpoint: gone.url }, input)).rejects.toThrow(`the server cannot reach HF_ENDPOINT (${gone.url}): ECONNREFUSED`);
    await expect(importFromHub(t.db, server.blobs, { endpoint: hub.url, token: 'hf_wrongtoken' }, input)).rejects.toThrow(/is gated: accept its conditions on the hub with the account whose token is the server's HF_TOKEN/);
    expect(staged()).toEqual([]);
    const { card } = await importFromHub(t.db, server.blobs, { endpoint: hub.url, token: TOKEN }, input);
    expect(card.family).toBe('qwen2');
    expect(staged()).toEqual([]);
  });

  it('imports with the CLI, the same model as the folder upload, audited with its source', async () => {
    const fromHub = await cli(['models', 'import', 'hf:fixtures/qwen2-chat', '--json']);
    expect(fromHub.code, fromHub.stderr).toBe(EXIT.OK);
    const { model } = JSON.parse(fromHub.stdout) as { model: { id: string; name: string; files: string[] } };
    // The default name is the repo's; README.md, .gitattributes and expected.json are not the model's.
    expect(model.name).toBe('qwen2-chat');
    expect(model.files).toEqual(['chat_template.jinja', 'config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);

    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'model-import-'));
    try {
      fs.cpSync(CHAT, folder, { recursive: true });
      fs.rmSync(path.join(folder, 'expected.json'));
      const uploaded = await cli(['models', 'import', folder, '--name', 'uploaded', '--json']);
      expect(uploaded.code, uploaded.stderr).toBe(EXIT.OK);
    } finally {
      fs.rmSync(folder, { recursive: true, force: true });
    }
    const rows = await t.db.pretrainedModel.findMany({ where: { teamId: owner.team.id, name: { in: ['qwen2-chat', 'uploaded'] } } });
    const [hubRow, folderRow] = ['qwen2-chat', 'uploaded'].map((n) => rows.find((r) => r.name === n)!);
    expect(hubRow.card).toEqual(folderRow.card);
    expect(hubRow.contentHash).toBe(folderRow.contentHash);
    const entry = await t.db.auditLog.findFirstOrThrow({ where: { targetId: model.id, action: 'model.imported' } });
    expect(entry.details).toMatchObject({ source: 'hf:fixtures/qwen2-chat@main', family: 'qwen2' });

    // A revision with a slash in it, under a chosen name; the name taken is refused before any download.
    const pr = await cli(['models', 'import', 'hf:fixtures/qwen2-chat@refs/pr/1', '--name', 'from-pr']);
    expect(pr.code, pr.stderr).toBe(EXIT.OK);
    expect(pr.stdout).toMatch(/model from-pr imported/);
    // Sharded weights: the shards are the ones the index lists.
    const shards = await cli(['models', 'import', 'hf:fixtures/qwen2-chat@sharded', '--name', 'sharded', '--json']);
    expect(shards.code, shards.stderr).toBe(EXIT.OK);
    expect((JSON.parse(shards.stdout) as { model: { files: string[] } }).model.files).toContain('model-00001-of-00001.safetensors');
    const taken = await cli(['models', 'import', 'hf:fixtures/qwen2-chat']);
    expect(taken.stderr).toMatch(/already has a model named "qwen2-chat"/);
    expect((await cli(['models', 'import', 'hf:no-slash'])).stderr).toMatch(/hf:owner\/name or hf:owner\/name@revision/);
    expect(staged()).toEqual([]);
  });
});
