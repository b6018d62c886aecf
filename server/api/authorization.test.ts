import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { addMember, createUserWithTeam, signUp, startTestServer } from '../test-support/test-server';
import { appRouter } from './root';
import { NO_SUCH_TEAM, type ProcedureMeta } from './trpc';

// Walks EVERY procedure of the root router, enumerated from the router itself, with every kind of
// caller, and checks allow or deny against the access the procedure declares. A new procedure
// without a sample input below fails this test, so none can skip its authorization.

type Role = 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER';
type CallerKind = 'anonymous' | 'outsider' | 'installation-admin' | Role;
const rank: Record<Role, number> = { VIEWER: 0, MEMBER: 1, ADMIN: 2, OWNER: 3 };

interface Fixture {
  teamId: string;
  environmentVersionId: string;
  otherTeamId: string;
  memberUserId: string;
  environmentId: string;
}

/**
 * The access policy, one line per procedure: who may call it, and a harmless input (valid, aimed
 * at team A, and where the procedure changes something, at an id that does not exist or with a
 * confirmation that does not match, so that allowed callers pass the gate without destroying
 * the fixture). A procedure's declared access must equal its line here, so changing who may call
 * a procedure is a reviewed change to this table.
 */
const policy: Record<string, [ProcedureMeta['access'], (f: Fixture) => unknown]> = {
  'system.health': ['public', () => undefined],
  'installation.settings': ['public', () => undefined],
  'installation.setOpenSignUp': ['installation-admin', () => ({ open: true })],
  'account.me': ['public', () => undefined],
  'account.updateProfile': ['user', () => ({ name: 'Same Name' })],
  'teams.create': ['user', () => ({ name: 'Scratch team' })],
  'teams.get': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'teams.rename': ['ADMIN', (f) => ({ teamId: f.teamId, name: 'Team A' })],
  'teams.delete': ['OWNER', (f) => ({ teamId: f.teamId, confirmName: 'not the name' })],
  'members.list': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'members.changeRole': ['ADMIN', (f) => ({ teamId: f.teamId, userId: 'no-such-user', role: 'MEMBER' })],
  'members.remove': ['ADMIN', (f) => ({ teamId: f.teamId, userId: 'no-such-user' })],
  'members.leave': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'members.transferOwnership': ['OWNER', (f) => ({ teamId: f.teamId, userId: 'no-such-user' })],
  'invitations.list': ['ADMIN', (f) => ({ teamId: f.teamId })],
  'invitations.create': ['ADMIN', (f) => ({ teamId: f.teamId, role: 'VIEWER' })],
  'invitations.revoke': ['ADMIN', (f) => ({ teamId: f.teamId, invitationId: 'no-such-invitation' })],
  'invitations.preview': ['public', () => ({ token: 'not-a-token' })],
  'invitations.accept': ['user', () => ({ token: 'not-a-token' })],
  'apiKeys.list': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'apiKeys.create': ['VIEWER', (f) => ({ teamId: f.teamId, name: 'matrix' })],
  'apiKeys.revoke': ['VIEWER', (f) => ({ teamId: f.teamId, keyId: 'no-such-key' })],
  'workerTokens.list': ['ADMIN', (f) => ({ teamId: f.teamId })],
  'workerTokens.create': ['ADMIN', (f) => ({ teamId: f.teamId, name: 'matrix' })],
  'workerTokens.revoke': ['ADMIN', (f) => ({ teamId: f.teamId, tokenId: 'no-such-token' })],
  'workerTokens.listShared': ['installation-admin', () => undefined],
  'workerTokens.createShared': ['installation-admin', () => ({ name: 'matrix' })],
  'workerTokens.revokeShared': ['installation-admin', () => ({ tokenId: 'no-such-token' })],
  'providers.list': ['ADMIN', (f) => ({ teamId: f.teamId })],
  'providers.create': ['ADMIN', (f) => ({ teamId: f.teamId, name: 'matrix', kind: 'SLURM', settings: { partition: 'gpu', installPath: '/opt/whetstone' } })],
  'providers.update': ['ADMIN', (f) => ({ teamId: f.teamId, providerId: 'no-such-provider', settings: { partition: 'gpu', installPath: '/opt/whetstone' } })],
  'providers.delete': ['ADMIN', (f) => ({ teamId: f.teamId, providerId: 'no-such-provider' })],
  'providers.listShared': ['installation-admin', () => undefined],
  'providers.createShared': ['installation-admin', () => ({ name: 'matrix', kind: 'SLURM', settings: { partition: 'gpu', installPath: '/opt/whetstone' } })],
  'providers.updateShared': ['installation-admin', () => ({ providerId: 'no-such-provider', settings: { partition: 'gpu', installPath: '/opt/whetstone' } })],
  'providers.deleteShared': ['installation-admin', () => ({ providerId: 'no-such-provider' })],
  'workers.list': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'workers.jobs': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'workers.drain': ['ADMIN', (f) => ({ teamId: f.teamId, workerId: 'no-such-worker' })],
  'workers.resume': ['ADMIN', (f) => ({ teamId: f.teamId, workerId: 'no-such-worker' })],
  'workers.revoke': ['ADMIN', (f) => ({ teamId: f.teamId, workerId: 'no-such-worker' })],
  'quotas.get': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'quotas.history': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'quotas.update': ['ADMIN', (f) => ({ teamId: f.teamId, maxConcurrentDevices: 4, maxQueuedJobs: 100, maxPriority: 100 })],
  'audit.list': ['ADMIN', (f) => ({ teamId: f.teamId })],
  'secrets.list': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'secrets.set': ['ADMIN', (f) => ({ teamId: f.teamId, name: 'MATRIX_TOKEN', value: 'matrix-value' })],
  'secrets.delete': ['ADMIN', (f) => ({ teamId: f.teamId, name: 'NO_SUCH_SECRET' })],
  'models.list': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'models.get': ['VIEWER', (f) => ({ teamId: f.teamId, modelId: 'no-such-model' })],
  'models.beginImport': ['MEMBER', (f) => ({ teamId: f.teamId, name: 'matrix-model', files: [{ path: 'config.json', bytes: 2, sha256: '0'.repeat(64) }] })],
  'models.uploadChunk': ['MEMBER', (f) => ({ teamId: f.teamId, uploadId: '00000000-0000-0000-0000-000000000000', path: 'config.json', offset: 0, data: 'e30=' })],
  'models.finishImport': ['MEMBER', (f) => ({ teamId: f.teamId, uploadId: '00000000-0000-0000-0000-000000000000' })],
  // No hub is reachable from the test server: an allowed caller is answered that HF_ENDPOINT cannot be reached.
  'models.importFromHub': ['MEMBER', (f) => ({ teamId: f.teamId, repo: 'matrix/model' })],
  'models.abandonImport': ['MEMBER', (f) => ({ teamId: f.teamId, uploadId: '00000000-0000-0000-0000-000000000000' })],
  'models.remove': ['ADMIN', (f) => ({ teamId: f.teamId, modelId: 'no-such-model' })],
  'models.exportCheckpoint': ['MEMBER', (f) => ({ teamId: f.teamId, checkpointId: 'no-such-checkpoint' })],
  'environments.list': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'environments.get': ['VIEWER', (f) => ({ teamId: f.teamId, environmentId: f.environmentId })],
  'environments.lastRuns': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'environments.version': ['VIEWER', (f) => ({ teamId: f.teamId, versionId: f.environmentVersionId })],
  'environments.saveVersion': ['MEMBER', (f) => ({ teamId: f.teamId, name: 'env-a', entry: 'env.ts', files: { 'env.ts': 'export default 1;' }, manifest: { name: 'env-a', version: '1.0.0', kind: 'single-turn' } })],
  'environments.create': ['MEMBER', (f) => ({ teamId: f.teamId, name: 'env-a', from: { blank: true } })],
  'environments.datasets': ['VIEWER', (f) => ({ teamId: f.teamId, versionId: f.environmentVersionId })],
  'environments.exportPackage': ['VIEWER', (f) => ({ teamId: f.teamId, versionId: f.environmentVersionId })],
  // A package whose hash does not match is refused after the gate, storing nothing.
  'environments.importPackage': ['MEMBER', (f) => ({ teamId: f.teamId, package: { format: 'whetstone-environment', formatVersion: 1, exportedAt: '', name: 'env-a', contentHash: '0'.repeat(64), entry: 'env.ts', files: {}, manifest: {}, datasets: [] } })],
  'environments.publish': ['ADMIN', (f) => ({ teamId: f.teamId, versionId: 'no-such-version', published: true })],
  'gallery.list': ['user', () => ({})],
  'gallery.entry': ['user', () => ({ environmentId: 'no-such-environment' })],
  'gallery.import': ['MEMBER', (f) => ({ teamId: f.teamId, versionId: 'no-such-version' })],
  'datasets.usage': ['VIEWER', (f) => ({ teamId: f.teamId, datasetId: 'no-such-dataset' })],
  'datasets.list': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'datasets.get': ['VIEWER', (f) => ({ teamId: f.teamId, datasetId: 'no-such-dataset' })],
  'datasets.rows': ['VIEWER', (f) => ({ teamId: f.teamId, versionId: 'no-such-version' })],
  'datasets.upload': ['MEMBER', (f) => ({ teamId: f.teamId, name: 'matrix', jsonl: '{"a":1}\n' })],
  'datasets.archive': ['ADMIN', (f) => ({ teamId: f.teamId, datasetId: 'no-such-dataset' })],
  'jobs.submit': ['MEMBER', (f) => ({ teamId: f.teamId, kind: 'TRAIN', config: { environmentVersionId: f.environmentVersionId } })],
  'jobs.preview': ['MEMBER', (f) => ({ teamId: f.teamId, kind: 'TRAIN', config: { environmentVersionId: f.environmentVersionId } })],
  'jobs.list': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'jobs.get': ['VIEWER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job' })],
  'jobs.cancel': ['MEMBER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job' })],
  'runs.list': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'runs.summary': ['VIEWER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job' })],
  'runs.teamCheckpoints': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'runs.bases': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'runs.checkpointContents': ['VIEWER', (f) => ({ teamId: f.teamId, checkpointId: 'no-such-checkpoint' })],
  'runs.nameCheckpoint': ['MEMBER', (f) => ({ teamId: f.teamId, checkpointId: 'no-such-checkpoint', name: 'matrix' })],
  'runs.teamMatches': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'runs.metricKeys': ['VIEWER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job' })],
  'runs.series': ['VIEWER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job', key: 'loss/total' })],
  'runs.since': ['VIEWER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job' })],
  'runs.rollouts': ['VIEWER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job' })],
  'runs.logs': ['VIEWER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job' })],
  'runs.matches': ['VIEWER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job' })],
  'runs.match': ['VIEWER', (f) => ({ teamId: f.teamId, matchId: 'no-such-match' })],
  'runs.checkpoints': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'runs.delete': ['MEMBER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job' })],
  'inference.checkpoint': ['VIEWER', (f) => ({ teamId: f.teamId, checkpointId: 'no-such-checkpoint' })],
  'inference.open': ['MEMBER', (f) => ({ teamId: f.teamId, checkpointId: 'no-such-checkpoint' })],
  'inference.sample': ['MEMBER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job', prompt: 'hi' })],
  'inference.close': ['MEMBER', (f) => ({ teamId: f.teamId, jobId: 'no-such-job' })],
  'tournaments.create': ['MEMBER', (f) => ({ teamId: f.teamId, environmentVersionId: 'no-such-version', players: [{ checkpointId: 'a' }, { bot: 'random' }] })],
  'tournaments.list': ['VIEWER', (f) => ({ teamId: f.teamId })],
  'tournaments.get': ['VIEWER', (f) => ({ teamId: f.teamId, tournamentId: 'no-such-tournament' })],
  'play.branch': ['MEMBER', (f) => ({ teamId: f.teamId, matchId: 'no-such-match', move: 0, policy: { bot: 'random' } })],
  'play.open': ['MEMBER', (f) => ({ teamId: f.teamId, source: { versionId: 'no-such-version' } })],
  'play.step': ['MEMBER', (f) => ({ teamId: f.teamId, sessionId: 'no-such-session', action: 'A' })],
  'play.close': ['MEMBER', (f) => ({ teamId: f.teamId, sessionId: 'no-such-session' })],
  'play.autoplay': ['MEMBER', (f) => ({ teamId: f.teamId, source: { versionId: 'no-such-version' }, policy: { random: true } })],
  'play.list': ['MEMBER', (f) => ({ teamId: f.teamId })],
};

const procedures = Object.entries(appRouter._def.procedures as unknown as Record<string, { _def: { type: string; meta?: ProcedureMeta } }>).map(
  ([path, p]) => ({ path, type: p._def.type, access: p._def.meta?.access }),
);

interface Outcome {
  status: number;
  code: string | null;
  message: string | null;
}

async function call(base: string, path: string, type: string, input: unknown, cookie?: string, bearer?: string): Promise<Outcome> {
  const headers: Record<string, string> = { origin: base };
  if (cookie) headers.cookie = cookie;
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const wrapped = input === undefined ? undefined : JSON.stringify({ json: input });
  const res =
    type === 'query'
      ? await fetch(`${base}/api/trpc/${path}${wrapped ? `?input=${encodeURIComponent(wrapped)}` : ''}`, { headers })
      : await fetch(`${base}/api/trpc/${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: wrapped ?? '{}' });
  const body = (await res.json()) as { error?: { json: { message: string; data: { code: string } } } };
  return { status: res.status, code: body.error?.json.data.code ?? null, message: body.error?.json.message ?? null };
}

/** Passed the authorization gate (it may still fail later, for example on a missing id). */
function allowed(o: Outcome): boolean {
  if (o.code === 'UNAUTHORIZED' || o.code === 'FORBIDDEN') return false;
  return !(o.code === 'NOT_FOUND' && o.message === NO_SUCH_TEAM);
}

function expectation(access: ProcedureMeta['access'], who: CallerKind): 'allow' | 'deny' {
  if (access === 'public') return 'allow';
  if (who === 'anonymous') return 'deny';
  if (access === 'user') return 'allow';
  if (access === 'installation-admin') return who === 'installation-admin' ? 'allow' : 'deny';
  if (who === 'outsider' || who === 'installation-admin') return 'deny';
  return rank[who] >= rank[access] ? 'allow' : 'deny';
}

describe('authorization matrix', () => {
  let t: TestDatabase;
  let server: Awaited<ReturnType<typeof startTestServer>>;
  let fixture: Fixture;
  const cookies: Partial<Record<CallerKind, string>> = {};
  const userIds: Partial<Record<Role, string>> = {};

  /** Puts team A's members back as they were, after a procedure that changes roles. */
  async function restoreTeam() {
    for (const role of ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'] as Role[]) {
      const userId = userIds[role]!;
      await t.db.membership.upsert({
        where: { teamId_userId: { teamId: fixture.teamId, userId } },
        update: { role },
        create: { teamId: fixture.teamId, userId, role },
      });
    }
  }

  beforeAll(async () => {
    t = await createTestDatabase();
    server = await startTestServer(t.db);
    // The first account of an installation is its admin; it belongs to no team of the fixture.
    const installationAdmin = await signUp(server.url, t.db);
    await t.db.membership.deleteMany({ where: { userId: installationAdmin.user.id } });
    cookies['installation-admin'] = installationAdmin.cookie;
    const owner = await createUserWithTeam(server.url, t.db);
    cookies.OWNER = owner.cookie;
    userIds.OWNER = owner.user.id;
    for (const role of ['ADMIN', 'MEMBER', 'VIEWER'] as Role[]) {
      const m = await addMember(server.url, t.db, owner.team.id, role);
      cookies[role] = m.cookie;
      userIds[role] = m.user.id;
    }
    const outsider = await createUserWithTeam(server.url, t.db);
    cookies.outsider = outsider.cookie;
    const environment = await t.db.environment.create({
      data: { teamId: owner.team.id, name: 'env-a', versions: { create: { version: 1, contentHash: 'h', files: { 'env.ts': '' }, entry: 'env.ts', manifest: {} } } },
      include: { versions: true },
    });
    fixture = {
      teamId: owner.team.id, environmentVersionId: environment.versions[0].id, otherTeamId: outsider.team.id,
      memberUserId: userIds.MEMBER!, environmentId: environment.id,
    };
  });
  afterAll(async () => {
    await server?.close();
    await t?.drop();
  });

  it('has a policy line for every procedure, and each procedure declares exactly that access', () => {
    const missing = procedures.filter((p) => !policy[p.path]).map((p) => p.path);
    expect(missing, 'add a policy line for these procedures to server/api/authorization.test.ts').toEqual([]);
    const mismatched = procedures
      .filter((p) => policy[p.path] && policy[p.path][0] !== p.access)
      .map((p) => `${p.path}: declares ${p.access}, policy says ${policy[p.path][0]}`);
    expect(mismatched).toEqual([]);
    const stale = Object.keys(policy).filter((path) => !procedures.some((p) => p.path === path));
    expect(stale, 'policy lines for procedures that no longer exist').toEqual([]);
  });

  const callers: CallerKind[] = ['anonymous', 'outsider', 'installation-admin', 'VIEWER', 'MEMBER', 'ADMIN', 'OWNER'];
  for (const procedure of procedures) {
    it(`${procedure.path} allows exactly the callers its policy names`, async () => {
      expect(policy[procedure.path], `no policy line for ${procedure.path}`).toBeDefined();
      const [access, sample] = policy[procedure.path];
      const results: string[] = [];
      for (const who of callers) {
        const outcome = await call(server.url, procedure.path, procedure.type, sample(fixture), cookies[who]);
        if (procedure.type === 'mutation') await restoreTeam();
        const expected = expectation(access, who);
        const got = allowed(outcome) ? 'allow' : 'deny';
        if (got !== expected) results.push(`${who}: expected ${expected}, got ${outcome.status} ${outcome.code} ${outcome.message}`);
        if (expected === 'deny' && who === 'anonymous') expect(outcome.code, `${procedure.path} anonymous`).toBe('UNAUTHORIZED');
        if (expected === 'deny' && who === 'outsider' && access !== 'installation-admin') {
          expect(outcome.code, `${procedure.path} outsider`).toBe('NOT_FOUND');
        }
      }
      expect(results).toEqual([]);
    });
  }

  it('a key made in team A works there with its creator role and gets NOT_FOUND or FORBIDDEN on every team-B procedure', async () => {
    const created = await call(server.url, 'apiKeys.create', 'mutation', { teamId: fixture.teamId, name: 'script' }, cookies.MEMBER);
    expect(created.code).toBeNull();
    const keyRow = await t.db.apiKey.findFirstOrThrow({ where: { name: 'script', teamId: fixture.teamId } });
    const res = await fetch(`${server.url}/api/trpc/apiKeys.create`, {
      method: 'POST',
      headers: { cookie: cookies.MEMBER!, origin: server.url, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { teamId: fixture.teamId, name: 'script-2' } }),
    });
    const key = ((await res.json()) as { result: { data: { json: { key: string } } } }).result.data.json.key;
    expect(key).toMatch(/^wsk_/);
    expect(keyRow.keyHash).not.toContain(key);

    // In team A the key acts as a member: it may submit jobs but not change quotas.
    expect((await call(server.url, 'jobs.list', 'query', { teamId: fixture.teamId }, undefined, key)).code).toBeNull();
    expect((await call(server.url, 'quotas.update', 'mutation', policy['quotas.update'][1](fixture), undefined, key)).code).toBe('FORBIDDEN');
    // In team B, where its creator is not a member, every team procedure is refused.
    const teamProcedures = procedures.filter((p) => !['public', 'user', 'installation-admin'].includes(policy[p.path][0]));
    for (const p of teamProcedures) {
      const input = { ...(policy[p.path][1]({ ...fixture, teamId: fixture.otherTeamId }) as object) };
      const outcome = await call(server.url, p.path, p.type, input, undefined, key);
      expect(['NOT_FOUND', 'FORBIDDEN'], `${p.path} with a team-A key on team B`).toContain(outcome.code);
    }
    // Even when its creator joins team B, the key stays bound to team A.
    await t.db.membership.create({ data: { teamId: fixture.otherTeamId, userId: fixture.memberUserId, role: 'OWNER' } });
    expect((await call(server.url, 'jobs.list', 'query', { teamId: fixture.otherTeamId }, undefined, key)).code).toBe('NOT_FOUND');
    await t.db.membership.deleteMany({ where: { teamId: fixture.otherTeamId, userId: fixture.memberUserId } });
  });

  it('a revoked or expired key is refused like no credentials', async () => {
    const res = await fetch(`${server.url}/api/trpc/apiKeys.create`, {
      method: 'POST',
      headers: { cookie: cookies.VIEWER!, origin: server.url, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { teamId: fixture.teamId, name: 'short-lived' } }),
    });
    const { key, id } = ((await res.json()) as { result: { data: { json: { key: string; id: string } } } }).result.data.json;
    expect((await call(server.url, 'jobs.list', 'query', { teamId: fixture.teamId }, undefined, key)).code).toBeNull();
    await call(server.url, 'apiKeys.revoke', 'mutation', { teamId: fixture.teamId, keyId: id }, cookies.VIEWER);
    const refused = await call(server.url, 'jobs.list', 'query', { teamId: fixture.teamId }, undefined, key);
    expect(refused).toMatchObject({ code: 'UNAUTHORIZED', message: 'The API key was refused: it is revoked' });
    const audit = await t.db.auditLog.findMany({ where: { targetId: id }, select: { action: true } });
    expect(audit.map((a) => a.action).sort()).toEqual(['api_key.created', 'api_key.refused', 'api_key.revoked']);
    await t.db.apiKey.update({ where: { id }, data: { revokedAt: null, expiresAt: new Date(Date.now() - 1000) } });
    expect((await call(server.url, 'jobs.list', 'query', { teamId: fixture.teamId }, undefined, key)).message).toBe('The API key was refused: it is expired');
    expect((await call(server.url, 'jobs.list', 'query', { teamId: fixture.teamId }, undefined, 'wsk_made-up')).message).toBe('The API key was refused: it is not known here');
  });

  it('a viewer cannot start a job; a member can', async () => {
    const input = policy['jobs.submit'][1](fixture);
    expect((await call(server.url, 'jobs.submit', 'mutation', input, cookies.VIEWER)).code).toBe('FORBIDDEN');
    expect((await call(server.url, 'jobs.submit', 'mutation', input, cookies.MEMBER)).code).toBeNull();
  });

  it('refuses a state-changing request with the session cookie from another site', async () => {
    const res = await fetch(`${server.url}/api/trpc/teams.create`, {
      method: 'POST',
      headers: { cookie: cookies.OWNER!, origin: 'https://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ json: { name: 'csrf' } }),
    });
    expect(res.status).toBe(403);
    expect(await t.db.team.count({ where: { name: 'csrf' } })).toBe(0);
  });
});
