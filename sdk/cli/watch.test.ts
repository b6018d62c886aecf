import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from 'socket.io';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClientToServerEvents, type LiveBatch, runRoom, type ServerToClientEvents } from '../live';
import type { Connection } from './client';
import { CliError, EXIT } from './errors';
import { type LogItem, type MetricItem, watchJob } from './watch';

// The CLI's watch against a socket.io server that speaks sdk/live.ts's events (typed as the
// gateway is): what it is given as live batches reaches the handlers unchanged; a batch of
// another run, or of a shape the contract does not know, is not shown.

describe('watch: live batches of the contract', () => {
  let http: HttpServer;
  let io: Server<ClientToServerEvents, ServerToClientEvents>;
  let url = '';
  let joined: (room: string) => void = () => {};

  beforeAll(async () => {
    http = createServer();
    io = new Server(http, { path: '/socket.io' });
    io.on('connection', (socket) => {
      socket.on('subscribe', async (payload, ack) => {
        await socket.join(payload.room);
        ack({ ok: true });
        joined(payload.room);
      });
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => io.close(() => resolve()));
  });

  it('hands metric and log batches to the handlers, and resolves when the job ends', async () => {
    let state = 'RUNNING';
    const conn = {
      url,
      apiKey: 'wsk_test',
      keySource: { description: 'test' },
      teamId: 'team',
      fail: (e: unknown) => new CliError(String(e), EXIT.UNREACHABLE),
      api: {
        runs: { since: { query: async () => ({ metrics: [], logs: [], rollouts: [], through: null, complete: true }) } },
        jobs: { get: { query: async () => ({ id: 'job-1', state }) } },
      },
    } as unknown as Connection;
    const metrics: MetricItem[] = [];
    const logs: LogItem[] = [];
    let gotLogs: () => void = () => {};
    const logsArrived = new Promise<void>((resolve) => (gotLogs = resolve));
    const room = new Promise<string>((resolve) => (joined = resolve));

    const watching = watchJob({ conn, jobId: 'job-1', pollMs: 60_000, onMetrics: (m) => metrics.push(...m), onLogs: (l) => (logs.push(...l), gotLogs()) });
    expect(await room).toBe(runRoom('job-1'));

    const position = { attempt: 1, stored: -1 };
    const metricBatch: LiveBatch = { jobId: 'job-1', ...position, seq: 0, kind: 'metrics', items: [{ key: 'reward/mean', step: 0, value: 0.5 }, { key: 'loss/total', step: 0, value: 2 }] };
    const otherRun: LiveBatch = { ...metricBatch, jobId: 'job-2', items: [{ key: 'reward/mean', step: 0, value: -1 }] };
    const logBatch: LiveBatch = { jobId: 'job-1', ...position, seq: 1, kind: 'logs', items: [{ line: 0, level: 'warn', message: 'hot', time: '2026-01-01T00:00:00.000Z' }] };
    io.to(runRoom('job-1')).emit('stream', otherRun);
    // Not a live batch: no position.
    io.to(runRoom('job-1')).emit('stream', { kind: 'metrics', jobId: 'job-1', items: [{ key: 'x/y', step: 0, value: 9 }] } as unknown as LiveBatch);
    io.to(runRoom('job-1')).emit('stream', metricBatch);
    io.to(runRoom('job-1')).emit('stream', logBatch);
    // A socket delivers in order: once the log batch is in, everything before it was handled.
    await logsArrived;
    expect(metrics).toEqual(metricBatch.items);
    expect(logs).toEqual([{ id: '1:1:0', level: 'warn', message: 'hot', time: '2026-01-01T00:00:00.000Z' }]);

    state = 'SUCCEEDED';
    io.to(runRoom('job-1')).emit('job', { jobIds: ['job-1'] });
    expect((await watching).state).toBe('SUCCEEDED');
  });
});
