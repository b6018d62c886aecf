import { afterAll, describe, expect, it } from 'vitest';
import { RoundThread } from './round-thread';
import type { SchedulerEvents } from './loop';
import { createUserWithTeam, useTestServer } from '../test-support/test-server';
import { seedTeam, trpc } from '../test-support/reliability/harness';

// The leader runs its rounds on a thread of its own (round-thread.ts): here under vitest, with the
// same tsx loader that `npm start` (node --import tsx server/main.ts) uses for the server.

describe('rounds on the round thread', () => {
  const ctx = useTestServer();
  const seen: Array<[string, unknown[]]> = [];
  const events: SchedulerEvents = {
    assigned: (...args) => seen.push(['assigned', args]),
    signal: (...args) => seen.push(['signal', args]),
    jobChanged: (...args) => seen.push(['jobChanged', args]),
  };
  const lines: string[] = [];
  let thread: RoundThread;
  afterAll(() => thread?.stop());

  it('reads, plans and places in the thread, and the assignment reaches the server to push', async () => {
    thread = new RoundThread(ctx.t.url, events, (line) => lines.push(line));
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const worker = await ctx.t.db.worker.create({
      data: {
        teamId: owner.team.id, name: 'sim', hostname: 'sim', credentialHash: `h-${Math.random()}`, backend: 'wasm', version: '0', lastHeartbeatAt: new Date(),
        devices: { create: [{ index: 0, kind: 'WASM', name: 'wasm', memoryBytes: 1n << 30n }] },
      },
    });
    const job = await ctx.t.db.job.create({ data: { teamId: owner.team.id, ownerId: owner.user.id, kind: 'TRAIN', config: {} } });
    expect(await thread.round(new Date(), true)).toEqual({ placed: 1, preempted: 0, waiting: 0 });
    expect((await ctx.t.db.job.findUniqueOrThrow({ where: { id: job.id } })).state).toBe('ASSIGNED');
    const assigned = seen.filter(([type]) => type === 'assigned');
    expect(assigned).toHaveLength(1);
    expect(assigned[0][1][0]).toBe(worker.id);
    expect(assigned[0][1][1]).toMatchObject({ jobId: job.id, attempt: 1 });
    expect(seen).toContainEqual(['jobChanged', [owner.team.id, job.id]]);
  });

  it('the API answers while the thread holds a round', async () => {
    const team = await seedTeam(ctx.t.db);
    // The thread starts the round only once gate[0] is set, after the API's answer: so the round
    // cannot be over before the query is answered, and the query's answer comes while the thread
    // holds the round (an event loop busy with it could not answer at all).
    const gate = new Int32Array(new SharedArrayBuffer(4));
    const order: string[] = [];
    const round = thread.round(new Date(), true, { gate }).then((summary) => {
      order.push('round');
      return summary;
    });
    const quota = await trpc<{ maxConcurrentDevices: number }>(ctx.server.url, team.apiKey, 'quotas.get', { teamId: team.teamId }, 'query');
    order.push('api');
    expect(quota.maxConcurrentDevices).toBeGreaterThan(0);
    Atomics.store(gate, 0, 1);
    Atomics.notify(gate, 0);
    await round;
    expect(order).toEqual(['api', 'round']);
  });

  it('a round that fails says why, and the next one runs', async () => {
    const broken = new RoundThread('postgresql://nobody@127.0.0.1:1/none', events);
    await expect(broken.round(new Date(), true)).rejects.toThrow(/reach database server|ECONNREFUSED/);
    await broken.stop();
    expect(await thread.round(new Date(), true)).toMatchObject({ preempted: 0 });
  });
});
