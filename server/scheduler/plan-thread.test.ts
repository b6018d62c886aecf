import { afterAll, describe, expect, it } from 'vitest';
import { PlanThread } from './plan-thread';
import { planRound } from './plan-round';
import { seedTeam, trpc } from '../test-support/reliability/harness';
import { syntheticCluster } from '../test-support/synthetic-cluster';
import { useTestServer } from '../test-support/test-server';

// The leader plans on a thread of its own (plan-thread.ts): here under vitest, with the same tsx
// loader that `npm start` (node --import tsx server/main.ts) uses for the server.

describe('planning on the planner thread', () => {
  const thread = new PlanThread();
  afterAll(() => thread.stop());

  it('plans in the thread what the round plans here', async () => {
    const { input } = syntheticCluster({ workers: 40, queued: 2_000, priorities: 'mixed', seed: 3 });
    const here = planRound(input);
    const there = await thread.plan(input);
    expect(there.plan).toEqual(here.plan);
    expect(there.read).toEqual(here.read.map((j) => j.id));
  });

  describe('while a large round is planned', () => {
    const ctx = useTestServer();

    it('the API answers before the round is done', async () => {
      const team = await seedTeam(ctx.t.db);
      // The thread answers only once gate[0] is set, after the API's answer: so the round cannot
      // be over before the query is answered, and the query's answer comes while the thread holds
      // the round (an event loop busy planning could not answer it at all).
      const gate = new Int32Array(new SharedArrayBuffer(4));
      const order: string[] = [];
      const { input } = syntheticCluster({ workers: 500, queued: 10_000, priorities: 'mixed', seed: 5 });
      const round = thread.plan(input, { gate }).then((result) => {
        order.push('round');
        return result;
      });
      const quota = await trpc<{ maxConcurrentDevices: number }>(ctx.server.url, team.apiKey, 'quotas.get', { teamId: team.teamId }, 'query');
      order.push('api');
      expect(quota.maxConcurrentDevices).toBeGreaterThan(0);
      Atomics.store(gate, 0, 1);
      Atomics.notify(gate, 0);
      const result = await round;
      expect(order).toEqual(['api', 'round']);
      expect(result.plan.placements.length + result.plan.preemptions.length).toBeGreaterThan(0);
    });
  });
});
