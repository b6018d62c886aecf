import { describe, expect, it } from 'vitest';
import { ENVIRONMENT_SECRETS_ROUTE } from '../../sdk/worker-protocol';
import { secretsKey } from '../secrets/secret-box';
import { setTeamSecret } from '../secrets/team-secrets';
import { activeAttempt } from '../test-support/test-attempts';
import { createUserWithTeam, useTestServer } from '../test-support/test-server';

// The test server's installation secret (test-support/test-server.ts).
const key = secretsKey('test-secret-test-secret-test-secret-0123');

describe('the worker route for the team secrets of a job environment', () => {
  const ctx = useTestServer();

  async function post(credential: string | null, body: unknown) {
    const res = await fetch(`${ctx.server.url}${ENVIRONMENT_SECRETS_ROUTE}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(credential ? { authorization: `Bearer ${credential}` } : {}) },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it("answers the worker holding the attempt with the values its manifest names, of the job's team only", async () => {
    const { db } = ctx.t;
    const a = await createUserWithTeam(ctx.server.url, db);
    const b = await createUserWithTeam(ctx.server.url, db);
    const manifest = {
      name: 'guarded', version: '1.0.0', kind: 'single-turn',
      server: { urls: ['http://127.0.0.1:9'], headers: { Authorization: { secret: 'GAME_TOKEN', prefix: 'Bearer ' }, 'X-Other': { secret: 'NOT_SET' } } },
    };
    const env = await db.environment.create({
      data: { teamId: a.team.id, name: 'guarded', versions: { create: { version: 1, contentHash: 'h', files: {}, entry: 'env.ts', manifest } } },
      include: { versions: true },
    });
    await setTeamSecret(db, key, { teamId: a.team.id, name: 'GAME_TOKEN', value: 'team-a-token', userId: a.user.id });
    await setTeamSecret(db, key, { teamId: a.team.id, name: 'UNUSED', value: 'never-sent', userId: a.user.id });
    await setTeamSecret(db, key, { teamId: b.team.id, name: 'NOT_SET', value: 'team-b-value', userId: b.user.id });
    const job = await db.job.create({ data: { teamId: a.team.id, ownerId: a.user.id, kind: 'TRAIN', config: { environmentVersionId: env.versions[0].id } } });
    const attempt = await activeAttempt(db, job, 1);

    const answer = await post(attempt.credential, { attemptId: attempt.attemptId, fencingToken: attempt.fencingToken });
    expect(answer).toEqual({ status: 200, body: { secrets: { GAME_TOKEN: 'team-a-token' } } });

    // A stale fencing token, another worker, no credential: refused, with no value.
    expect((await post(attempt.credential, { attemptId: attempt.attemptId, fencingToken: '999999' })).status).toBe(409);
    const otherJob = await db.job.create({ data: { teamId: b.team.id, ownerId: b.user.id, kind: 'TRAIN', config: {} } });
    const other = await activeAttempt(db, otherJob, 1);
    const stranger = await post(other.credential, { attemptId: attempt.attemptId, fencingToken: attempt.fencingToken });
    expect(stranger.status).toBe(404);
    expect(JSON.stringify(stranger.body)).not.toContain('team-a-token');
    expect((await post(null, { attemptId: attempt.attemptId, fencingToken: attempt.fencingToken })).status).toBe(401);
    // A job without an environment gets none.
    expect(await post(other.credential, { attemptId: other.attemptId, fencingToken: other.fencingToken })).toEqual({ status: 200, body: { secrets: {} } });
  });
});
