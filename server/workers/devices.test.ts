import { describe, expect, it } from 'vitest';
import { DEVICES_ROUTE } from '../../sdk/worker-protocol';
import { scheduleOnce } from '../scheduler/loop';
import { seedTeam } from '../test-support/reliability/harness';
import { useTestServer } from '../test-support/test-server';

// A worker whose devices changed (probed again after a device loss) advertises them (DEVICES_ROUTE):
// those gone are removed, the scheduler places by the new list.

describe('a worker advertising its devices again', () => {
  const ctx = useTestServer();
  const events = { assigned() {}, signal() {}, jobChanged() {} };

  it('replaces the devices, refuses a bad list and a missing credential, and the planner follows', async () => {
    const team = await seedTeam(ctx.t.db);
    const gpu = (index: number) => ({ index, kind: 'WEBGPU', name: `gpu ${index}`, memoryBytes: 8 * 2 ** 30 });
    const reg = await fetch(`${ctx.server.url}/api/workers/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: team.workerToken, name: 'gpu-box', hostname: 'h', backend: 'webgpu', version: '0', devices: [gpu(0), gpu(1)] }),
    });
    const { workerId, credential } = (await reg.json()) as { workerId: string; credential: string };
    const post = (body: unknown, auth = `Bearer ${credential}`) =>
      fetch(`${ctx.server.url}${DEVICES_ROUTE}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: auth }, body: JSON.stringify(body) });

    expect((await post({ backend: 'webgpu', devices: [gpu(0)] }, '')).status).toBe(401);
    const duplicate = await post({ backend: 'webgpu', devices: [gpu(0), gpu(0)] });
    expect(duplicate.status).toBe(400);
    expect(JSON.stringify(await duplicate.json())).toContain('device indexes must be distinct');

    // One GPU lost: the worker has one left, renamed as the new probe found it.
    const answer = await post({ backend: 'webgpu', devices: [{ ...gpu(1), name: 'gpu 1 again' }] });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ devices: 1 });
    const devices = await ctx.t.db.workerDevice.findMany({ where: { workerId }, orderBy: { index: 'asc' } });
    expect(devices.map((d) => [d.index, d.kind, d.name])).toEqual([[1, 'WEBGPU', 'gpu 1 again']]);

    // A two-device job no longer fits; the planner says so rather than placing it.
    const job = await ctx.t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', config: {}, deviceCount: 2 } });
    await ctx.t.db.worker.update({ where: { id: workerId }, data: { lastHeartbeatAt: new Date() } });
    await scheduleOnce(ctx.t.db, events);
    expect((await ctx.t.db.job.findUniqueOrThrow({ where: { id: job.id } })).state).toBe('QUEUED');

    // Every GPU gone, then the CPU fallback advertised: the worker's backend follows.
    expect(await (await post({ backend: 'webgpu', devices: [] })).json()).toEqual({ devices: 0 });
    expect(await ctx.t.db.workerDevice.count({ where: { workerId } })).toBe(0);
    expect(await (await post({ backend: 'wasm', devices: [{ index: 0, kind: 'WASM', name: 'wasm', memoryBytes: 4 * 2 ** 30 }] })).json()).toEqual({ devices: 1 });
    expect((await ctx.t.db.worker.findUniqueOrThrow({ where: { id: workerId } })).backend).toBe('wasm');
  });
});
