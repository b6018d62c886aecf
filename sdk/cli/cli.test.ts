/**
 * The CLI against a real control plane (tRPC, socket.io, scheduler, PostgreSQL) and, for --watch
 * and eval, a real worker daemon running real training in its runner process.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { transformer } from '../transformer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker, stopGracefully, waitUntil, type Proc } from '../../server/test-support/reliability/harness';
import type { AppRouter } from '../../server/api/root';
import { createTestDatabase, type TestDatabase } from '../../server/test-support/test-database';
import { createUserWithTeam, startTestServer } from '../../server/test-support/test-server';
import { startHttpBandit } from '../../gpu-worker/test-support/http-bandit-server';
import { EXIT } from './errors';
import { toJson } from './io';
import { runCapture } from '../test-support/cli/test-io';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const BANDIT = 'env-templates/bandit';

let t: TestDatabase;
let server: Awaited<ReturnType<typeof startTestServer>>;
let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
let apiKey: string;
let home: string;
let env: Record<string, string>;

function cookieApi(cookie: string) {
  return createTRPCClient<AppRouter>({
    links: [httpBatchLink({ url: `${server.url}/api/trpc`, transformer, headers: () => ({ cookie, origin: server.url }) })],
  });
}

const cli = (argv: string[], extraEnv: Record<string, string> = {}, signal?: AbortSignal) => runCapture(argv, { env: { ...env, ...extraEnv }, cwd: REPO, signal });

beforeAll(async () => {
  t = await createTestDatabase();
  server = await startTestServer(t.db, { databaseUrl: t.url, tickMs: 100 });
  owner = await createUserWithTeam(server.url, t.db);
  apiKey = (await cookieApi(owner.cookie).apiKeys.create.mutate({ teamId: owner.team.id, name: 'cli test' })).key;
  // An empty WHETSTONE_HOME so that no developer's local credentials leak into the test.
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-cli-'));
  env = { WHETSTONE_URL: server.url, WHETSTONE_API_KEY: apiKey, WHETSTONE_HOME: home };
});

afterAll(async () => {
  await server?.close();
  await t?.drop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe('whetstone CLI against a server without workers', () => {
  let firstJob = '';

  it('run uploads the folder, submits a TRAIN job and prints its id; a second run reuses the version', async () => {
    const first = await cli(['run', BANDIT, '--algo', 'grpo']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(EXIT.OK);
    expect(first.stdout).toMatch(/environment bandit: version 1 \(uploaded; dry run: \d+ episodes/);
    firstJob = /submitted job (\S+): TRAIN grpo, 250 steps/.exec(first.stdout)![1];
    const job = await t.db.job.findUniqueOrThrow({ where: { id: firstJob } });
    expect(job).toMatchObject({ kind: 'TRAIN', teamId: owner.team.id, state: 'QUEUED' });
    expect(job.config).toMatchObject({ training: { algorithm: 'grpo' } });

    const second = await cli(['run', BANDIT, '--algo', 'ppo', '--steps', '7', '--json']);
    expect(second.code).toBe(EXIT.OK);
    const doc = second.json();
    expect(doc.environment).toMatchObject({ name: 'bandit', version: 1, created: false, versionId: (job.config as { environmentVersionId: string }).environmentVersionId });
    expect(doc.job).toMatchObject({ kind: 'TRAIN', state: 'QUEUED', steps: 7 });
    expect(doc.job.id).not.toBe(firstJob);
    expect(await t.db.environmentVersion.count()).toBe(1);
    const secondJob = await t.db.job.findUniqueOrThrow({ where: { id: doc.job.id } });
    expect(secondJob.config).toMatchObject({ training: { algorithm: 'ppo', steps: 7 } });

    // The environment by name and by id submit against the same version, without uploading.
    const byName = await cli(['run', 'bandit', '--algo', 'grpo', '--json']);
    expect(byName.code).toBe(EXIT.OK);
    expect(byName.json().environment.versionId).toBe(doc.environment.versionId);
    const byId = await cli(['run', doc.environment.environmentId, '--algo', 'grpo', '--json']);
    expect(byId.json().environment.versionId).toBe(doc.environment.versionId);

    // Without --algo, the manifest's algorithm and settings; --config may be inline JSON.
    const fromManifest = await cli(['run', 'bandit', '--config', '{"training": {"steps": 4}}']);
    expect(fromManifest.stdout).toMatch(/submitted job \S+: TRAIN grpo, 4 steps/);

    // Tags, from --tag and --config together, each once.
    const tagged = await cli(['run', 'bandit', '--config', '{"tags": ["baseline"]}', '--tag', 'lr-sweep', '--tag', 'baseline', '--json']);
    const taggedJob = await t.db.job.findUniqueOrThrow({ where: { id: (JSON.parse(tagged.stdout) as { job: { id: string } }).job.id } });
    expect((taggedJob.config as { tags?: string[] }).tags).toEqual(['baseline', 'lr-sweep']);
  });

  it('a misspelt or renamed option is refused by the server, naming it and what to write (exit 6)', async () => {
    const misspelt = await cli(['run', 'bandit', '--set', 'clipHig=0.3']);
    expect(misspelt.code).toBe(EXIT.REJECTED);
    expect(misspelt.stderr).toContain('config.training.clipHig: unknown option; did you mean `clipHigh`?');
    const renamed = await cli(['run', 'bandit', '--config', '{"training": {"normalizeAdvantageStd": false}}']);
    expect(renamed.code).toBe(EXIT.REJECTED);
    expect(renamed.stderr).toContain('config.training.normalizeAdvantageStd: renamed; write normalizeByStd');
    const moved = await cli(['run', 'bandit', '--config', '{"model": {"width": 32}}']);
    expect(moved.stderr).toContain('config.model: moved; write training.model');
  });

  it('jobs lists the team\'s jobs as a table and as JSON', async () => {
    const human = await cli(['jobs']);
    expect(human.code).toBe(EXIT.OK);
    expect(human.stdout.split('\n')[0]).toMatch(/^ID\s+KIND\s+STATE\s+PRIORITY\s+OWNER\s+AGE\s+CHECKPOINT\s+WAITING/);
    expect(human.stdout).toContain(firstJob);
    const json = await cli(['jobs', '--json']);
    expect(json.code).toBe(EXIT.OK);
    const { jobs } = json.json();
    // The six the first test submitted.
    expect(jobs).toHaveLength(6);
    expect(jobs.map((j: any) => j.id)).toContain(firstJob);
    expect(jobs[0]).toMatchObject({ kind: 'TRAIN', state: 'QUEUED', owner: { id: owner.user.id } });
    expect(typeof jobs[0].createdAt).toBe('string');
  });

  it('cancel ends a queued job; an unknown job is exit 5', async () => {
    const res = await cli(['cancel', firstJob]);
    expect(res.code).toBe(EXIT.OK);
    expect(res.stdout).toContain(`cancelled job ${firstJob}`);
    expect((await t.db.job.findUniqueOrThrow({ where: { id: firstJob } })).state).toBe('CANCELLED');
    const again = await cli(['cancel', firstJob, '--json']);
    expect(again.json()).toMatchObject({ jobId: firstJob, state: 'CANCELLED', cancelRequested: false });
    const missing = await cli(['cancel', 'no-such-job']);
    expect(missing.code).toBe(EXIT.NOT_FOUND);
    expect(missing.stderr).toContain('No such job');
    expect((await cli(['logs', firstJob])).code).toBe(EXIT.OK);
  });

  it('run --watch follows a job to its end: cancelled while queued is exit 1', async () => {
    const before = await t.db.job.count();
    let printed = '';
    const watching = runCapture(['run', BANDIT, '--algo', 'grpo', '--watch'], { env, cwd: REPO, onStdout: (text) => (printed += text) });
    const job = await waitUntil('the watched job', async () => (await t.db.job.count()) > before && t.db.job.findFirst({ orderBy: { createdAt: 'desc' } }), 20_000);
    // Cancelled once the watcher has said it waits (the order a user sees), not after a while.
    await waitUntil('the watcher to say queued', async () => printed.includes('queued'), 60_000);
    expect((await cli(['cancel', job.id])).code).toBe(EXIT.OK);
    const res = await watching;
    expect(res.code).toBe(EXIT.JOB_FAILED);
    expect(res.stdout).toContain('queued');
    expect(res.stdout).toContain(`job ${job.id} CANCELLED`);
  });

  it('a folder that fails its dry run prints file:line:column and is not submitted (exit 6)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-env-'));
    fs.copyFileSync(path.join(REPO, BANDIT, 'manifest.json'), path.join(dir, 'manifest.json'));
    const code = fs.readFileSync(path.join(REPO, BANDIT, 'env.ts'), 'utf8').replace("reward: (_prompt, completion, task) => {", "reward: (_prompt, completion, task) => {\n    const broken = ;");
    fs.writeFileSync(path.join(dir, 'env.ts'), code);
    const before = await t.db.job.count();
    const res = await cli(['run', dir, '--algo', 'grpo']);
    fs.rmSync(dir, { recursive: true, force: true });
    expect(res.code).toBe(EXIT.REJECTED);
    expect(res.stderr).toMatch(/failed its dry run; not submitted/);
    const line = code.split('\n').findIndex((l) => l.includes('const broken = ;')) + 1;
    expect(res.stderr).toMatch(new RegExp(`env\\.ts:${line}:\\d+: error: `));
    expect(await t.db.job.count()).toBe(before);
  });

  it('a refused key is exit 4, a server that is down is exit 3', async () => {
    const bad = await cli(['jobs'], { WHETSTONE_API_KEY: 'wsk_not_a_real_key' });
    expect(bad.code).toBe(EXIT.UNAUTHORIZED);
    expect(bad.stderr).toContain('the API key was refused');
    const noKey = await runCapture(['jobs'], { env: { WHETSTONE_URL: server.url, WHETSTONE_HOME: home }, cwd: REPO });
    expect(noKey.code).toBe(EXIT.UNAUTHORIZED);

    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const down = await cli(['jobs', '--json'], { WHETSTONE_URL: `http://127.0.0.1:${port}` });
    expect(down.code).toBe(EXIT.UNREACHABLE);
    expect(down.stderr).toContain(`cannot reach Whetstone at http://127.0.0.1:${port}: is npm start running?`);
    expect(down.json()).toMatchObject({ error: { exitCode: EXIT.UNREACHABLE } });
  });

  it('local mode: the key and team come from WHETSTONE_HOME without any flag', async () => {
    const local = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-home-'));
    fs.writeFileSync(path.join(local, 'local-credentials.json'), JSON.stringify({ workerToken: 'wst_x', apiKey, teamId: owner.team.id }));
    const res = await runCapture(['workers', '--json'], { env: { WHETSTONE_URL: server.url, WHETSTONE_HOME: local }, cwd: REPO });
    fs.rmSync(local, { recursive: true, force: true });
    expect(res.code).toBe(EXIT.OK);
    expect(res.json()).toEqual({ workers: [] });
  });
});

describe('whetstone CLI and datasets', () => {
  it('run on a data-dependent folder uploads its JSONL as a dataset version and names it in the job', async () => {
    const first = await cli(['run', 'env-templates/math', '--algo', 'grpo', '--json']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(EXIT.OK);
    const job = await t.db.job.findUniqueOrThrow({ where: { id: first.json().job.id } });
    const datasetVersionId = (job.config as { datasetVersionId?: string }).datasetVersionId;
    expect(datasetVersionId).toEqual(expect.any(String));
    const version = await t.db.datasetVersion.findUniqueOrThrow({ where: { id: datasetVersionId }, include: { dataset: true } });
    expect(version.dataset).toMatchObject({ teamId: owner.team.id, name: expect.stringMatching(/^math\/.+\.jsonl$/) });
    expect(version.rowCount).toBeGreaterThan(100);
    // Run again, and by name: the same dataset version, nothing uploaded twice.
    const again = await cli(['run', 'math', '--algo', 'grpo', '--json']);
    expect(again.code).toBe(EXIT.OK);
    const againJob = await t.db.job.findUniqueOrThrow({ where: { id: again.json().job.id } });
    expect((againJob.config as { datasetVersionId?: string }).datasetVersionId).toBe(datasetVersionId);
    expect(await t.db.datasetVersion.count({ where: { datasetId: version.datasetId } })).toBe(1);
    // Its held-out split is uploaded too, for the evaluations during training, and found again by name.
    const heldOutId = (job.config as { evalDatasetVersionId?: string }).evalDatasetVersionId;
    const heldOut = await t.db.datasetVersion.findUniqueOrThrow({ where: { id: heldOutId }, include: { dataset: true } });
    expect(heldOut.dataset.name).toBe('math/data/held-out.jsonl');
    expect((againJob.config as { evalDatasetVersionId?: string }).evalDatasetVersionId).toBe(heldOutId);
  });

  it('datasets upload stores a file (bad lines named, exit 6); run --algo sft --dataset <file> trains on it', async () => {
    const good = path.join(home, 'sums.jsonl');
    fs.writeFileSync(good, ['{"prompt": "1+1=", "completion": "2"}', '{"prompt": "2+2=", "completion": "4"}'].join('\n'));
    const uploaded = await cli(['datasets', 'upload', good, '--name', 'sums', '--json']);
    expect(uploaded.code).toBe(EXIT.OK);
    expect(uploaded.json().dataset).toMatchObject({ name: 'sums', version: 1, rowCount: 2, created: true });
    const listed = await cli(['datasets']);
    expect(listed.stdout.split('\n')[0]).toMatch(/^NAME\s+VERSION\s+ROWS\s+SIZE/);
    expect(listed.stdout).toMatch(/^sums\s+1\s+2\s/m);

    // Too large for one request: refused before sending, naming the file and the limit.
    const huge = path.join(home, 'huge.jsonl');
    fs.writeFileSync(huge, `{"prompt": "${'x'.repeat(17_000_000)}", "completion": "y"}\n`);
    const tooLarge = await cli(['datasets', 'upload', huge]);
    expect(tooLarge.code).toBe(EXIT.REJECTED);
    expect(tooLarge.stderr).toMatch(/huge\.jsonl is too large to upload: the request would be 17\.0 MB, and the server takes at most 16\.0 MB/);

    const bad = path.join(home, 'bad.jsonl');
    fs.writeFileSync(bad, '{"prompt": "x"}\n{oops}\n');
    const refused = await cli(['datasets', 'upload', bad]);
    expect(refused.code).toBe(EXIT.REJECTED);
    expect(refused.stderr).toMatch(/line 2: not JSON/);
    expect((await cli(['datasets', 'upload', path.join(home, 'missing.jsonl')])).code).toBe(EXIT.NOT_FOUND);
    expect((await cli(['datasets', 'frobnicate'])).code).toBe(EXIT.USAGE);

    const sft = await cli(['run', BANDIT, '--algo', 'sft', '--dataset', good, '--steps', '5', '--json']);
    expect(sft.code).toBe(EXIT.OK);
    const job = await t.db.job.findUniqueOrThrow({ where: { id: sft.json().job.id } });
    expect(job).toMatchObject({ kind: 'SFT', config: { training: { algorithm: 'sft', steps: 5, learningRate: 0.001 } } });
    // Uploaded under the file's name (the --name upload above is another dataset with the same bytes).
    const used = await t.db.datasetVersion.findUniqueOrThrow({ where: { id: (job.config as { datasetVersionId: string }).datasetVersionId }, include: { dataset: true } });
    const named = await t.db.datasetVersion.findUniqueOrThrow({ where: { id: uploaded.json().dataset.versionId } });
    expect(used.dataset.name).toBe('sums.jsonl');
    expect(used.contentHash).toBe(named.contentHash);
  });
});

describe('whetstone CLI and bases', () => {
  // The folder, not the name: a test above made a broken latest version of bandit.
  it('run --from takes a base by name (or a checkpoint id) and --save-as names the run’s base-to-be', async () => {
    const api = cookieApi(owner.cookie);
    const teamId = owner.team.id;
    const source = await t.db.job.findFirstOrThrow({ where: { teamId, kind: 'TRAIN' } });
    const ckpt = await t.db.checkpoint.create({ data: { teamId, jobId: source.id, kind: 'SAMPLER', step: 3, storageKey: 'cli-base', bytes: 1n, sha256: 'x' } });
    await api.runs.nameCheckpoint.mutate({ teamId, checkpointId: ckpt.id, name: 'bandit-base' });

    const byName = await cli(['run', BANDIT, '--from', 'bandit-base', '--save-as', 'bandit-next']);
    expect(byName.stderr).toBe('');
    expect(byName.stdout).toContain(`starting from base bandit-base: step 3 (checkpoint ${ckpt.id})`);
    const job = await t.db.job.findUniqueOrThrow({ where: { id: /submitted job (\S+):/.exec(byName.stdout)![1] } });
    expect(job.config).toMatchObject({ baseCheckpointId: ckpt.id, saveAs: 'bandit-next' });

    const byId = await cli(['run', BANDIT, '--from', ckpt.id, '--json']);
    expect(byId.code).toBe(EXIT.OK);
    expect((await t.db.job.findUniqueOrThrow({ where: { id: byId.json().job.id } })).config).toMatchObject({ baseCheckpointId: ckpt.id });
    // Neither a base nor a checkpoint of the team's: the server's refusal names the field.
    const unknown = await cli(['run', BANDIT, '--from', 'no-such-base']);
    expect(unknown.code).toBe(EXIT.NOT_FOUND);
    expect(unknown.stderr).toContain('No such checkpoint in this team');
    const badName = await cli(['run', BANDIT, '--save-as', 'Bad Name']);
    expect(badName.code).toBe(EXIT.USAGE);
  });
});

describe('whetstone CLI and team secrets', () => {
  it('secrets set reads the value from stdin or a file, list shows names only, delete removes; the value is never printed', async () => {
    const set = await runCapture(['secrets', 'set', 'CLI_TOKEN'], { env, cwd: REPO, stdin: 'cli-secret-value-1\n' });
    expect(set).toMatchObject({ code: EXIT.OK, stdout: 'secret CLI_TOKEN created (the value is not shown again)\n' });
    const file = path.join(home, 'token.txt');
    fs.writeFileSync(file, 'cli-secret-value-2');
    expect((await cli(['secrets', 'set', 'CLI_TOKEN', '--value-file', file])).stdout).toBe('secret CLI_TOKEN replaced (the value is not shown again)\n');
    const rows = await t.db.teamSecret.findMany({ where: { teamId: owner.team.id } });
    expect(rows.map((r) => r.name)).toEqual(['CLI_TOKEN']);

    const listed = await cli(['secrets', 'list']);
    expect(listed.stdout).toMatch(/^NAME\s+SET BY\s+UPDATED\nCLI_TOKEN\s+/);
    const json = await cli(['secrets', 'list', '--json']);
    expect(json.json().secrets).toHaveLength(1);
    for (const out of [set, listed, json]) expect(out.stdout + out.stderr).not.toContain('cli-secret-value');

    // No value on a terminal, a bad name, an empty value: refused before any request.
    expect((await cli(['secrets', 'set', 'CLI_TOKEN'])).stderr).toMatch(/reads the value from stdin or --value-file, not from a terminal/);
    expect((await cli(['secrets', 'set', 'lower'])).code).toBe(EXIT.USAGE);
    expect((await runCapture(['secrets', 'set', 'EMPTY'], { env, cwd: REPO, stdin: '\n' })).stderr).toMatch(/the value of EMPTY: a secret cannot be empty/);

    expect((await cli(['secrets', 'delete', 'CLI_TOKEN'])).stdout).toBe('secret CLI_TOKEN deleted\n');
    expect((await cli(['secrets', 'delete', 'CLI_TOKEN']))).toMatchObject({ code: EXIT.NOT_FOUND, stderr: expect.stringContaining('No secret CLI_TOKEN in this team') });
    expect((await cli(['secrets', 'list'])).stdout).toMatch(/^no secrets: an admin sets one/);
  });
});

describe('whetstone provider: a pool\'s cluster providers', () => {
  it('creates one from a settings file (refusing a bad one, field by field), prints its credential once, lists, updates and deletes it', async () => {
    const bad = path.join(home, 'bad-slurm.json');
    fs.writeFileSync(bad, JSON.stringify({ partition: 'gpu; rm -rf /', installPath: 'relative/path', maxWorkers: 0 }));
    const refused = await cli(['provider', 'create', 'hpc', '--settings', bad]);
    expect(refused.code).toBe(EXIT.USAGE);
    expect(refused.stderr).toMatch(/partition: /);
    expect(refused.stderr).toMatch(/installPath: installPath: an absolute path/);
    expect(refused.stderr).toMatch(/maxWorkers: /);
    expect(await t.db.clusterProvider.count()).toBe(0);

    const good = path.join(home, 'slurm.json');
    fs.writeFileSync(good, JSON.stringify({ partition: 'gpu', gres: 'gpu:1', installPath: '/shared/whetstone', maxWorkers: 2 }));
    const created = await cli(['provider', 'create', 'hpc', '--settings', good]);
    expect(created.code).toBe(EXIT.OK);
    const token = /(wsp_\S+)/.exec(created.stdout)?.[1] ?? '';
    expect(token).not.toBe('');
    expect(created.stdout).toContain(`npx whetstone provider slurm --server ${server.url}`);
    const listed = await cli(['provider', 'list']);
    expect(listed.stdout).toMatch(/^NAME\s+KIND\s+AGENT\s+LAUNCHES\s+LAST ERROR\nhpc\s+SLURM\s+never polled\s+0 running, 0 pending\s+-/);
    expect(listed.stdout).not.toContain(token);

    fs.writeFileSync(good, JSON.stringify({ partition: 'gpu', gres: 'gpu:1', installPath: '/shared/whetstone', maxWorkers: 5 }));
    expect((await cli(['provider', 'update', 'hpc', '--settings', good])).stdout).toBe('provider hpc: settings saved\n');
    expect((await t.db.clusterProvider.findFirstOrThrow()).settings).toMatchObject({ maxWorkers: 5 });
    expect((await cli(['provider', 'update', 'nope', '--settings', good])).code).toBe(EXIT.NOT_FOUND);
    expect((await cli(['provider', 'delete', 'hpc'])).code).toBe(EXIT.OK);
    expect((await cli(['provider', 'list'])).stdout).toMatch(/^no cluster provider/);
    expect((await cli(['provider', 'create', 'hpc'])).stderr).toMatch(/needs --settings FILE.json/);
  });
});

describe('whetstone CLI and HTTP environments', () => {
  it('run uploads a folder with only a manifest naming its server; the dry run plays the live server', async () => {
    const bandit = await startHttpBandit();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-http-env-'));
    try {
      const manifest = { name: 'cli-http-bandit', version: '1.0.0', kind: 'single-turn', limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 2 }, server: { urls: [bandit.url] } };
      fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest));
      const ran = await cli(['run', dir, '--algo', 'grpo', '--json']);
      expect(ran.stderr).toBe('');
      expect(ran.code).toBe(EXIT.OK);
      const doc = ran.json();
      expect(doc.environment).toMatchObject({ name: 'cli-http-bandit', version: 1, created: true });
      const version = await t.db.environmentVersion.findUniqueOrThrow({ where: { id: doc.environment.versionId } });
      expect(version).toMatchObject({ validationStatus: 'VALID', files: {} });
      expect(bandit.calls.steps).toBeGreaterThan(0);
      expect((await cli(['cancel', doc.job.id])).code).toBe(EXIT.OK);
    } finally {
      await bandit.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('env create --http saves an environment from the flags alone, dry-run on the live server; one that is down is named', async () => {
    const bandit = await startHttpBandit();
    try {
      const made = await cli(['env', 'create', 'cli-made-http', '--http', bandit.url, '--max-tokens', '2', '--timeout', '30']);
      expect(made.stderr).toBe('');
      expect(made.code).toBe(EXIT.OK);
      expect(made.stdout).toMatch(/environment cli-made-http: version 1 \(saved; dry run: /);
      expect(made.stdout).toContain('whetstone run cli-made-http --watch');
      const env = await t.db.environment.findFirstOrThrow({ where: { name: 'cli-made-http' }, include: { versions: true } });
      expect(env.versions[0]).toMatchObject({ validationStatus: 'VALID', files: {} });
      expect(env.versions[0].manifest).toMatchObject({ kind: 'single-turn', limits: { maxTurns: 1, maxTokensPerTurn: 2 }, server: { urls: [bandit.url], timeoutSeconds: 30 } });
      // The same flags again: the same content, the same version.
      const again = (await cli(['env', 'create', 'cli-made-http', '--http', bandit.url, '--max-tokens', '2', '--timeout', '30', '--json'])).json();
      expect(again.environment).toMatchObject({ version: 1, created: false });
      // With rows: they become the team's dataset <name>/<file>, read by the dry run and found by `run <name>`.
      const rowsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-rows-'));
      const rowsFile = path.join(rowsDir, 'rows.jsonl');
      fs.writeFileSync(rowsFile, '{"prompt": "colour: red\\narm:", "ground_truth": "C"}\n');
      try {
        const withRows = await cli(['env', 'create', 'cli-rows-http', '--http', bandit.url, '--max-tokens', '2', '--dataset', rowsFile]);
        expect(withRows.stderr).toBe('');
        expect(withRows.stdout).toContain('dataset cli-rows-http/rows.jsonl: version 1, 1 rows (uploaded)');
        const version = await t.db.environmentVersion.findFirstOrThrow({ where: { environment: { name: 'cli-rows-http' } }, include: { dryRunDatasetVersion: { include: { dataset: true } } } });
        expect(version).toMatchObject({ validationStatus: 'VALID', dryRunDatasetVersion: { dataset: { name: 'cli-rows-http/rows.jsonl' } } });
      } finally {
        fs.rmSync(rowsDir, { recursive: true, force: true });
      }
    } finally {
      await bandit.close();
    }
    // The server is gone now: saved, but invalid, and its URL named.
    const down = await cli(['env', 'create', 'cli-made-http', '--http', bandit.url, '--max-tokens', '3']);
    expect(down.code).toBe(EXIT.REJECTED);
    expect(down.stderr).toContain('failed its dry run');
    expect(down.stderr).toContain(bandit.url);
    // Flags that make no environment are refused before anything is sent.
    expect((await cli(['env', 'create', 'x'])).stderr).toContain('--http URL');
    expect((await cli(['env', 'create', 'x', '--http', 'ftp://host'])).code).toBe(EXIT.USAGE);
    expect((await cli(['env', 'create', 'x', '--http', bandit.url, '--max-turns', '3'])).stderr).toContain('--max-turns goes with --kind multi-turn');
    expect((await cli(['env', 'list'])).code).toBe(EXIT.USAGE);
  });

  it('env export writes a package; env import takes it into another team with its content hash; a changed file is refused', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-package-'));
    try {
      await cookieApi(owner.cookie).environments.create.mutate({ teamId: owner.team.id, name: 'pkg-bandit', from: { template: 'bandit' } });
      const file = path.join(dir, 'bandit.wsenv');
      const written = await cli(['env', 'export', 'pkg-bandit', '--output', file]);
      expect(written.stderr).toBe('');
      expect(written.stdout).toMatch(/environment pkg-bandit version 1 written to .*bandit\.wsenv \(content hash [0-9a-f]{12}…\)/);
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { contentHash: string; files: Record<string, string> };
      // To stdout without --output: the same package.
      expect(JSON.parse((await cli(['env', 'export', 'pkg-bandit'])).stdout)).toMatchObject({ contentHash: pkg.contentHash, files: pkg.files });

      // Another team, with its own key.
      const other = await createUserWithTeam(server.url, t.db);
      const otherKey = (await cookieApi(other.cookie).apiKeys.create.mutate({ teamId: other.team.id, name: 'import' })).key;
      const asOther = (argv: string[]) => cli(argv, { WHETSTONE_API_KEY: otherKey });
      const imported = await asOther(['env', 'import', file]);
      expect(imported.stderr).toBe('');
      expect(imported.stdout).toContain('environment pkg-bandit: version 1 (imported, its content hash kept)');
      expect(await t.db.environmentVersion.findFirstOrThrow({ where: { environment: { teamId: other.team.id, name: 'pkg-bandit' } } })).toMatchObject({ contentHash: pkg.contentHash, validationStatus: 'VALID' });
      expect((await asOther(['env', 'import', file])).stdout).toContain('version 1 (unchanged: the team has this version)');

      // Changed after export: refused, naming why.
      fs.writeFileSync(file, JSON.stringify({ ...pkg, files: { ...pkg.files, 'env.ts': `${pkg.files['env.ts']}\n// changed\n` } }));
      const changed = await asOther(['env', 'import', file, '--name', 'changed']);
      expect(changed.code).toBe(EXIT.REJECTED);
      expect(changed.stderr).toContain('its content hash does not match its files');
      fs.writeFileSync(file, 'not json');
      expect((await asOther(['env', 'import', file])).stderr).toContain('is not a Whetstone environment package: not JSON');
      expect((await cli(['env', 'export', 'no-such-env'])).code).toBe(EXIT.NOT_FOUND);
      expect((await cli(['env', 'export', 'pkg-bandit', '--version', '999'])).stderr).toContain('environment pkg-bandit has no version 999');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('whetstone CLI with a worker daemon', () => {
  // A real daemon process (as npm start runs it): tfjs and its runner children stay out of the test process.
  let daemon: Proc;
  let daemonHome: string;
  let configFile: string;

  beforeAll(async () => {
    // The jobs queued above would go first: cancel them (through the CLI).
    for (const job of (await cli(['jobs', '--state', 'QUEUED', '--json'])).json().jobs) expect((await cli(['cancel', job.id])).code).toBe(EXIT.OK);
    const { token } = await cookieApi(owner.cookie).workerTokens.create.mutate({ teamId: owner.team.id, name: 'cli test worker' });
    daemonHome = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-cli-worker-'));
    daemon = startWorker({ url: server.url, token, name: 'cli-test', home: daemonHome, backend: 'wasm' });
    configFile = path.join(daemonHome, 'tiny.json');
    fs.writeFileSync(configFile, JSON.stringify({ training: { batchSize: 2, groupSize: 2, checkpointEvery: 2, evalEvery: 100, model: { layers: 1, width: 16, heads: 2, contextLength: 96 } } }));
  });

  afterAll(async () => {
    if (daemon) await stopGracefully(daemon);
    if (daemonHome) fs.rmSync(daemonHome, { recursive: true, force: true });
  });

  it('workers lists the daemon', async () => {
    const res = await waitUntil('the worker online', async () => {
      const r = await cli(['workers']);
      return r.stdout.includes('cli-test') && r.stdout.includes('yes') && r;
    }, 30_000);
    expect(res.stdout.split('\n')[0]).toMatch(/^NAME\s+STATE\s+ONLINE\s+POOL/);
  });

  it('run --watch trains to SUCCEEDED with progress and checkpoints; eval scores a checkpoint', async () => {
    const stop = AbortSignal.timeout(75_000);
    const res = await cli(['run', BANDIT, '--algo', 'grpo', '--steps', '3', '--config', configFile, '--set', 'clipHigh=0.3', '--set', 'epochs=2', '--watch', '--logs'], {}, stop);
    if (res.code !== EXIT.OK) console.log(res.stdout, res.stderr, daemon.output(), await t.db.job.findMany({ include: { events: true } }));
    expect(res.stderr).toBe('');
    expect(res.code).toBe(EXIT.OK);
    expect(res.stdout).toMatch(/step 3\/3 {2}reward\/mean \d/);
    expect(res.stdout).toMatch(/job \S+ SUCCEEDED in/);
    expect(res.stdout).toMatch(/checkpoints:\n\s+ID\s+KIND\s+STEP\s+SIZE/);
    const jobId = /submitted job ([^\s:]+)/.exec(res.stdout)![1];
    const checkpoints = await t.db.checkpoint.findMany({ where: { jobId } });
    expect(checkpoints.length).toBeGreaterThan(0);
    for (const c of checkpoints) expect(res.stdout).toContain(c.id);

    // One step numbering (sdk/live.ts, stepNumber): the stored metrics, the runner's log line (printed
    // by --logs) and the CLI's progress say the same N for every step, and a checkpoint after step N has step N.
    const steps = (await t.db.metricPoint.findMany({ where: { jobId, key: 'reward/mean' }, orderBy: { step: 'asc' } })).map((m) => m.step);
    expect(steps).toEqual([1, 2, 3]);
    for (const n of steps) {
      expect(res.stdout).toMatch(new RegExp(`^step ${n} of 3: reward \\d`, 'm'));
      expect(res.stdout).toMatch(new RegExp(`^step ${n}/3 {2}reward/mean \\d`, 'm'));
    }
    const afterTwo = checkpoints.find((c) => c.kind === 'TRAINING' && c.step === 2)!;
    expect(res.stdout).toContain(`training checkpoint after step 2: ${afterTwo.id}`);
    expect(checkpoints.filter((c) => c.kind === 'SAMPLER').map((c) => c.step)).toEqual([3]);

    // `jobs <id> --config` shows what it trained with: the --set values over --config over the manifest.
    const shown = await cli(['jobs', jobId, '--config']);
    expect(shown.code).toBe(EXIT.OK);
    expect(shown.stdout).toMatch(/training \(grpo; \* differs from the documented default\)/);
    expect(shown.stdout).toMatch(/clipHigh\s+0\.3\s+\*/);
    expect(shown.stdout).toMatch(/epochs\s+2\s+\*/);
    expect(shown.stdout).toMatch(/model\.contextLength\s+96\s+\*/);
    expect(shown.stdout).toMatch(/normalizeByStd\s+true\s*\n/);
    const stored = await t.db.job.findUniqueOrThrow({ where: { id: jobId } });
    expect(stored.config).toMatchObject({ training: { clipHigh: 0.3, epochs: 2, steps: 3, batchSize: 2, clipLow: 0.2 } });

    const sampler = checkpoints.find((c) => c.kind === 'SAMPLER') ?? checkpoints[0];
    // `jobs` lists the run with its newest sampler checkpoint, the one to evaluate.
    const row = (await cli(['jobs'])).stdout.split('\n').find((line) => line.startsWith(jobId));
    expect(row).toMatch(new RegExp(`^${jobId}\\s+TRAIN\\s+SUCCEEDED\\s.*\\s${sampler.id} @${sampler.step} \\(\\+${checkpoints.length - 1}\\)`));
    const evaluated = await cli(['eval', sampler.id, '--against', 'random', '--games', '4', '--json']);
    expect(evaluated.code).toBe(EXIT.OK);
    const doc = evaluated.json();
    expect(doc.final.state).toBe('SUCCEEDED');
    expect(doc.final.metrics).toHaveProperty(['eval/score']);
    expect(doc.config).toMatchObject({ checkpointId: sampler.id, games: 4, against: 'random' });

    // --from continues from a checkpoint's weights (GRPO after SFT, or more GRPO).
    const continued = await cli(['run', BANDIT, '--algo', 'grpo', '--from', sampler.id, '--config', configFile, '--json']);
    expect(continued.code).toBe(EXIT.OK);
    const next = await t.db.job.findUniqueOrThrow({ where: { id: continued.json().job.id } });
    expect(next.config).toMatchObject({ baseCheckpointId: sampler.id });
    expect((await cli(['cancel', next.id])).code).toBe(EXIT.OK);
  });

  it("a job on an HTTP environment behind a token: the daemon asks for the team secret at the job's start and the server gets the header; unset, the job fails naming it", async () => {
    const guarded = await startHttpBandit({ token: 'daemon-token-5150' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-guarded-env-'));
    try {
      const server = { urls: [guarded.url], headers: { Authorization: { secret: 'BANDIT_TOKEN', prefix: 'Bearer ' } } };
      const manifest = { name: 'cli-guarded', version: '1.0.0', kind: 'single-turn', limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 2 }, server };
      fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest));
      expect((await runCapture(['secrets', 'set', 'BANDIT_TOKEN'], { env, cwd: REPO, stdin: 'daemon-token-5150' })).code).toBe(EXIT.OK);
      const ran = await cli(['run', dir, '--algo', 'grpo', '--steps', '1', '--config', configFile, '--watch', '--logs'], {}, AbortSignal.timeout(75_000));
      if (ran.code !== EXIT.OK) console.log(ran.stdout, ran.stderr, daemon.output());
      expect(ran.code).toBe(EXIT.OK);
      expect(ran.stdout).toMatch(/job \S+ SUCCEEDED in/);
      expect([...guarded.calls.authorizations]).toEqual(['Bearer daemon-token-5150']);
      expect(guarded.calls.steps).toBeGreaterThan(0);
      const jobId = /submitted job ([^\s:]+)/.exec(ran.stdout)![1];
      // Nowhere in the job's row, events or log lines.
      const stored = await t.db.job.findUniqueOrThrow({ where: { id: jobId }, include: { events: true } });
      const lines = await t.db.logLine.findMany({ where: { jobId } });
      expect(lines.length).toBeGreaterThan(0);
      expect(toJson({ stored, lines })).not.toContain('daemon-token-5150');
      expect(ran.stdout + daemon.output()).not.toContain('daemon-token-5150');

      // Deleted: the same version's next job fails at its start, naming the secret.
      expect((await cli(['secrets', 'delete', 'BANDIT_TOKEN'])).code).toBe(EXIT.OK);
      const failed = await cli(['run', dir, '--algo', 'grpo', '--steps', '1', '--config', configFile, '--watch'], {}, AbortSignal.timeout(75_000));
      expect(failed.code).not.toBe(EXIT.OK);
      expect(failed.stdout + failed.stderr).toMatch(/the team secret BANDIT_TOKEN, which is not set: a team admin sets it under the team's Secrets/);
    } finally {
      await guarded.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
