import { describe, expect, it } from 'vitest';
import { apiCall } from '../test-support/api-call';
import { seedTeam, type Team } from '../test-support/reliability/harness';
import { activeAttempt, postBatch } from '../test-support/test-attempts';
import { useTestServer } from '../test-support/test-server';

// User JSON keeps every key it has on its way through the database and the API: an environment's
// info named `__proto__` once vanished (zod's records and Prisma's writer both assign keys one by
// one, and assigning "__proto__" sets a prototype), and `$type` is Prisma's own tag.

/** JSON as an environment's JSON.parse gives it: `__proto__` an own key. */
const odd = () => JSON.parse('{"__proto__": {"x": 1}, "constructor": {"prototype": 2}, "tagged": {"$type": "BigInt", "value": "5"}, "a": [{"__proto__": 3}]}') as Record<string, unknown>;

function expectOdd(value: unknown) {
  const v = value as Record<string, unknown>;
  expect(Object.keys(v).sort()).toEqual(['__proto__', 'a', 'constructor', 'tagged']);
  expect(Object.getOwnPropertyDescriptor(v, '__proto__')?.value).toEqual({ x: 1 });
  expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
  expect(v.constructor).toEqual({ prototype: 2 });
  expect(v.tagged).toEqual({ $type: 'BigInt', value: '5' });
  expect(Object.getOwnPropertyDescriptor((v.a as object[])[0], '__proto__')?.value).toBe(3);
}

/** A call with the team's API key. */
const call = <T>(url: string, team: Team, procedure: string, input: unknown, kind: 'query' | 'mutation' = 'query') => apiCall<T>(url, team.apiKey, procedure, input, kind);

describe('user JSON keys', () => {
  const ctx = useTestServer();

  it("a run's rollouts and matches keep __proto__, constructor and $type keys from the worker's batch to the API", async () => {
    const team = await seedTeam(ctx.t.db);
    const job = await ctx.t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', config: {} }, select: { id: true, teamId: true } });
    const attempt = await activeAttempt(ctx.t.db, job, 1);
    const rollout = { step: 1, agent: 'agent', index: 0, segments: [{ text: 'hi', trainable: true, role: 'assistant' }], reward: 1, info: { finalInfo: odd() } };
    expect((await postBatch(ctx.server.url, attempt, 0, 'rollouts', [rollout])).status).toBe(200);
    const match = { step: 1, agents: [{ name: 'a', policy: 'learner' }], moves: [{ index: 0, info: odd() }], result: odd(), winner: null };
    expect((await postBatch(ctx.server.url, attempt, 1, 'matches', [match])).status).toBe(200);

    const rollouts = await call<{ samples: Array<{ info: { finalInfo: unknown } }> }>(ctx.server.url, team, 'runs.rollouts', { teamId: team.teamId, jobId: job.id });
    expectOdd(rollouts.samples[0].info.finalInfo);
    const [listed] = await call<Array<{ id: string; result: unknown }>>(ctx.server.url, team, 'runs.matches', { teamId: team.teamId, jobId: job.id });
    expectOdd(listed.result);
    const served = await call<{ moves: Array<{ info: unknown }> }>(ctx.server.url, team, 'runs.match', { teamId: team.teamId, matchId: listed.id });
    expectOdd(served.moves[0].info);
  });

  it("a dry run's transcripts keep an environment's __proto__ info key from the sandbox to the API", async () => {
    const team = await seedTeam(ctx.t.db);
    const code = `import { defineEnvironment } from 'whetstone';
export default defineEnvironment({
  name: 'keys', systemPrompt: 's', sample: () => undefined,
  reset() { return 'go'; },
  step() { return { observation: '', reward: 1, terminated: true, info: JSON.parse(${JSON.stringify(JSON.stringify(odd()))}) }; },
  bots: { any: () => 'x' },
});
`;
    const saved = await call<{ versionId: string; validation: { ok: boolean } }>(ctx.server.url, team, 'environments.saveVersion', {
      teamId: team.teamId, name: 'keys', entry: 'env.ts', files: { 'env.ts': code },
      manifest: { name: 'keys', version: '1.0.0', kind: 'multi-turn', limits: { maxTurns: 2, maxTokensPerTurn: 4, maxResponseTokens: 8 } },
    }, 'mutation');
    expect(saved.validation.ok).toBe(true);
    const version = await call<{ validation: { transcripts: Array<{ finalInfo: unknown; turns: Array<{ info: unknown }> }> } }>(ctx.server.url, team, 'environments.version', {
      teamId: team.teamId, versionId: saved.versionId,
    });
    expectOdd(version.validation.transcripts[0].finalInfo);
    expectOdd(version.validation.transcripts[0].turns[0].info);
  });
});
