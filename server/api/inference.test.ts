/**
 * Inference sessions end to end: tRPC (inference.open/sample/close), the scheduler, a real worker
 * daemon process whose runner loads a checkpoint made by a 2-step TRAIN job, tokens streamed back
 * over the worker socket and relayed to a browser socket.io client in the run's room, and the
 * idle timeout that ends the session SUCCEEDED.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { io as connect, type Socket } from 'socket.io-client';
import type { SampleEvent } from '../../sdk/live';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker, stopGracefully, waitUntil, type Proc } from '../test-support/reliability/harness';
import { EXIT } from '../../sdk/cli/errors';
import { runCapture } from '../../sdk/test-support/cli/test-io';
import { createUserWithTeam, useTestServer } from '../test-support/test-server';
import { sessionClient } from '../test-support/trpc-client';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

type Done = Extract<SampleEvent, { kind: 'done' }>;
type Token = Extract<SampleEvent, { kind: 'token' }>;

describe('inference sessions', () => {
  const s = useTestServer({ withScheduler: true });
  let daemon: Proc;
  let home: string;
  let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
  let api: ReturnType<typeof client>;
  let checkpointId = '';
  let browser: Socket;

  const client = (cookie: string) => sessionClient(s.server.url, cookie);

  beforeAll(async () => {
    owner = await createUserWithTeam(s.server.url, s.t.db);
    api = client(owner.cookie);
    const { key } = await api.apiKeys.create.mutate({ teamId: owner.team.id, name: 'inference test' });
    const { token } = await api.workerTokens.create.mutate({ teamId: owner.team.id, name: 'inference test worker' });
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-inference-'));
    daemon = startWorker({ url: s.server.url, token, name: 'inference-test', home, backend: 'wasm' });

    // A tiny checkpoint: a 2-step TRAIN job on the bandit template, through the CLI.
    const configFile = path.join(home, 'tiny.json');
    fs.writeFileSync(configFile, JSON.stringify({ training: { batchSize: 2, groupSize: 2, checkpointEvery: 2, evalEvery: 100, model: { layers: 1, width: 16, heads: 2, contextLength: 96 } } }));
    const env = { WHETSTONE_URL: s.server.url, WHETSTONE_API_KEY: key, WHETSTONE_HOME: home };
    const run = await runCapture(['run', 'env-templates/bandit', '--algo', 'grpo', '--steps', '2', '--config', configFile, '--json'], { env, cwd: REPO });
    expect(run.code).toBe(EXIT.OK);
    const trainJob = run.json().job.id as string;
    const done = await waitUntil('the TRAIN job to end', async () => {
      const j = await s.t.db.job.findUniqueOrThrow({ where: { id: trainJob } });
      return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(j.state) && j;
    }, 60_000);
    if (done.state !== 'SUCCEEDED') console.log(daemon.output(), done);
    expect(done.state).toBe('SUCCEEDED');
    const checkpoints = await s.t.db.checkpoint.findMany({ where: { jobId: trainJob } });
    checkpointId = (checkpoints.find((c) => c.kind === 'SAMPLER') ?? checkpoints[0]).id;

    browser = connect(s.server.url, { path: '/socket.io', transports: ['websocket'], extraHeaders: { cookie: owner.cookie, origin: s.server.url } });
  }, 110_000);

  afterAll(async () => {
    browser?.close();
    if (daemon) await stopGracefully(daemon);
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  it('racing opens share one session; open → RUNNING; sample streams tokens to the run room; a second open reuses the job; idle ends it SUCCEEDED; other teams cannot sample', async () => {
    const teamId = owner.team.id;
    // Three clicks at once: one session, queued once.
    const racing = await Promise.all([1, 2, 3].map(() => api.inference.open.mutate({ teamId, checkpointId, idleSeconds: 10 })));
    expect(racing.filter((o) => !o.reused)).toHaveLength(1);
    const jobId = racing[0].jobId;
    expect(new Set(racing.map((o) => o.jobId))).toEqual(new Set([jobId]));
    const again = await api.inference.open.mutate({ teamId, checkpointId });
    expect(again).toMatchObject({ jobId, reused: true });

    const ack = (await browser.emitWithAck('subscribe', { room: `run:${jobId}` })) as { ok: boolean; error?: string };
    expect(ack).toEqual({ ok: true });
    await waitUntil('the session RUNNING', async () => (await s.t.db.job.findUniqueOrThrow({ where: { id: jobId } })).state === 'RUNNING');
    expect((await api.inference.open.mutate({ teamId, checkpointId })).jobId).toBe(jobId);

    const events: SampleEvent[] = [];
    browser.on('sample', (e: SampleEvent) => events.push(e));
    const { requestId } = await api.inference.sample.mutate({ teamId, jobId, prompt: 'Pick a number: ', maxTokens: 24, temperature: 1, seed: 7 });
    const done = await waitUntil('the sample to end', async () => events.find((e): e is Done => e.requestId === requestId && e.kind === 'done'), 20_000);
    if (done.reason === 'error') console.log(done, daemon.output());
    expect(['eos', 'stop', 'length']).toContain(done.reason);
    const tokens = events.filter((e): e is Token => e.requestId === requestId && e.kind === 'token');
    expect(events.indexOf(done)).toBe(events.length - 1);
    expect(tokens.map((e) => e.text).join('')).toBe(done.text);
    for (const t of tokens) expect(t.logprob).toBeLessThanOrEqual(0);
    if (done.reason === 'length') expect(tokens.length).toBeGreaterThan(0);

    // The playground's request: a conversation in the policy's chat format, with each token's
    // five likeliest alternatives (the chosen token's probability is at most the likeliest's).
    const chat = await api.inference.sample.mutate({ teamId, jobId, chat: { system: 'Play.', messages: [{ role: 'user', text: 'Your move.' }] }, maxTokens: 8, temperature: 1, seed: 3, alternatives: 5 });
    await waitUntil('the chat sample to end', async () => events.find((e) => e.requestId === chat.requestId && e.kind === 'done'), 20_000);
    const chatTokens = events.filter((e): e is Token => e.requestId === chat.requestId && e.kind === 'token');
    for (const t of chatTokens) {
      expect(t.alternatives?.length).toBe(5);
      const alts = t.alternatives!.map((a) => a.logprob);
      expect(alts).toEqual([...alts].sort((a, b) => b - a));
      expect(t.logprob).toBeLessThanOrEqual(alts[0] + 1e-9);
    }
    await expect(api.inference.sample.mutate({ teamId, jobId, chat: { system: '', messages: [] } })).rejects.toMatchObject({ data: { code: 'BAD_REQUEST' } });

    // A member of another team sees no such team, let alone the session.
    const stranger = await createUserWithTeam(s.server.url, s.t.db);
    await expect(client(stranger.cookie).inference.sample.mutate({ teamId, jobId, prompt: 'x', maxTokens: 4, temperature: 1 })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    await expect(client(stranger.cookie).inference.sample.mutate({ teamId: stranger.team.id, jobId, prompt: 'x', maxTokens: 4, temperature: 1 })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });

    // Idle for 10 s: the session ends by itself and frees its device.
    const ended = await waitUntil('the idle session to end', async () => {
      const j = await s.t.db.job.findUniqueOrThrow({ where: { id: jobId }, include: { jobAttempts: true } });
      return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(j.state) && j;
    }, 25_000);
    if (ended.state !== 'SUCCEEDED') console.log(daemon.output(), ended);
    expect(ended.state).toBe('SUCCEEDED');
    expect(ended.jobAttempts[0].exitReason).toContain('idle for 10 s');
    await expect(api.inference.sample.mutate({ teamId, jobId, prompt: 'x', maxTokens: 4, temperature: 1 })).rejects.toMatchObject({ data: { code: 'PRECONDITION_FAILED' } });

    // The next open starts a new session; close cancels it.
    const next = await api.inference.open.mutate({ teamId, checkpointId, idleSeconds: 10 });
    expect(next).toMatchObject({ reused: false });
    expect(next.jobId).not.toBe(jobId);
    await api.inference.close.mutate({ teamId, jobId: next.jobId });
    await waitUntil('the closed session CANCELLED', async () => (await s.t.db.job.findUniqueOrThrow({ where: { id: next.jobId } })).state === 'CANCELLED', 15_000);
  }, 90_000);
});
