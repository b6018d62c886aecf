import { io as connectSocket, type Socket } from 'socket.io-client';
import type { Command } from '../args';
import type { Connection } from '../client';
import { CliError, EXIT, keyRefused } from '../errors';
import { type ClientToServerEvents, runRoom, type SampleEvent, type ServerToClientEvents } from '../../live';
import { call, type CommandContext } from './context';
import { checkpointNamed, findModel } from './references';

/**
 * `whetstone sample`: one completion from an imported model or a checkpoint, for scripts. It
 * opens (or reuses) the playground's kind of inference session, follows the session's room over
 * socket.io, and sends the request once a worker holds the session; the answer's end carries
 * every sampled token's id, text and log-probability.
 */

type SampleCommand = Extract<Command, { name: 'sample' }>;
type LiveSocket = Socket<ServerToClientEvents, ClientToServerEvents>;
type Done = Extract<SampleEvent, { kind: 'done' }>;

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

export async function sampleCommand(ctx: CommandContext, cmd: SampleCommand): Promise<number> {
  const conn = await ctx.connect();
  const { model } = await findModel(conn, cmd.target);
  const served = model ? { modelId: model.id } : { checkpointId: (await checkpointNamed(conn, cmd.target)).checkpointId };
  const session = await call(conn, () => conn.api.inference.open.mutate({ teamId: conn.teamId, ...served, idleSeconds: cmd.idleSeconds }));
  ctx.out.note(`inference session ${session.jobId} (${session.reused ? 'reused' : 'new'}) for ${model ? `imported model ${model.name}` : `checkpoint ${served.checkpointId}`}`);

  const socket: LiveSocket = connectSocket(conn.url, { path: '/socket.io', transports: ['websocket'], extraHeaders: { authorization: `Bearer ${conn.apiKey}` } });
  try {
    const answers = await follow(socket, conn, session.jobId, ctx.io.signal);
    await untilRunning(ctx, conn, session.jobId, answers, ctx.io.signal);
    // A socket that dropped meanwhile left the room: its tokens would not come.
    answers.check();
    const { requestId } = await call(conn, () =>
      conn.api.inference.sample.mutate({
        teamId: conn.teamId,
        jobId: session.jobId,
        prompt: cmd.chat ? '' : cmd.prompt,
        ...(cmd.chat ? { chat: { system: cmd.system ?? '', messages: [{ role: 'user' as const, text: cmd.prompt }] } } : {}),
        maxTokens: cmd.maxTokens,
        temperature: cmd.temperature,
        ...(cmd.topP !== undefined ? { topP: cmd.topP } : {}),
        ...(cmd.seed !== undefined ? { seed: cmd.seed } : {}),
      }),
    );
    const done = await answers.done(requestId, (text) => {
      if (!ctx.out.json) ctx.io.stdout.write(text);
    }, () => stillServing(conn, session.jobId), deadlineMs(cmd.maxTokens));
    if (done.reason === 'error' || done.reason === 'cancelled') {
      if (!ctx.out.json) ctx.io.stdout.write('\n');
      throw new CliError(`the sample ${done.reason === 'error' ? 'failed' : 'was cut off'}: ${done.error ?? 'no reason given'}`, EXIT.JOB_FAILED);
    }
    if (!ctx.out.json) ctx.io.stdout.write('\n');
    const timing = done.timing;
    const rate = timing && timing.decodeMs > 0 && timing.tokens > 1 ? `, ${((timing.tokens - 1) / (timing.decodeMs / 1000)).toFixed(1)} tokens/s` : '';
    ctx.out.note(
      `${done.reason}: ${done.tokens?.length ?? 0} tokens${timing ? `, first after ${Math.round(timing.firstTokenMs)} ms${rate}` : ''}; the session stays open until it is idle${session.reused ? '' : ` for ${cmd.idleSeconds} s`} (whetstone cancel ${session.jobId} ends it)`,
    );
    ctx.out.document({ jobId: session.jobId, text: done.text, tokens: done.tokens ?? [], reason: done.reason, timing: done.timing ?? null });
    return EXIT.OK;
  } finally {
    socket.removeAllListeners();
    socket.close();
  }
}

/** How long an answer may take once sent: a minute, and a generous second a token on a slow worker. */
const deadlineMs = (maxTokens: number) => 60_000 + maxTokens * 1_000;

/** Why the session can no longer answer (it ended, or lost its worker), or null while it serves. */
async function stillServing(conn: Connection, jobId: string): Promise<string | null> {
  const job = await call(conn, () => conn.api.jobs.get.query({ teamId: conn.teamId, jobId }));
  return job.state === 'RUNNING' ? null : `the session is ${job.state.toLowerCase()}${job.failureReason ? ` (${job.failureReason})` : ''} and did not answer: run the command again`;
}

interface Answers {
  /** Resolves on the session's `job` events (a state change), or after `ms`. */
  changed(ms: number): Promise<void>;
  /** Throws if the connection was lost since the room was joined. */
  check(): void;
  /**
   * The request's end; `onText` gets its text as the tokens come. Between events it asks `gone`
   * whether the session still serves (a request sent to a worker that just went is never
   * answered), and gives up after `deadline` ms.
   */
  done(requestId: string, onText: (text: string) => void, gone: () => Promise<string | null>, deadline: number): Promise<Done>;
}

/**
 * Joins the session's room. Every sample event is kept from here on: a fast worker's first
 * tokens may come before the request's id does.
 */
function follow(socket: LiveSocket, conn: Connection, jobId: string, signal?: AbortSignal): Promise<Answers> {
  const events: SampleEvent[] = [];
  let wake: (() => void) | null = null;
  let lost: CliError | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  socket.on('sample', (event) => {
    if (event.jobId !== jobId) return;
    events.push(event);
    notify();
  });
  socket.on('job', (event) => event.jobIds.includes(jobId) && notify());
  socket.on('disconnect', () => {
    lost = new CliError('lost the connection to the server while sampling: run the command again (the session is kept)', EXIT.UNREACHABLE);
    notify();
  });
  signal?.addEventListener('abort', notify);
  const next = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const answers: Answers = {
    changed: (ms) => next(ms),
    check() {
      if (lost) throw lost;
    },
    async done(requestId, onText, gone, deadline) {
      const until = Date.now() + deadline;
      for (let seen = 0; ; ) {
        for (; seen < events.length; seen++) {
          const e = events[seen];
          if (e.requestId !== requestId) continue;
          if (e.kind === 'token') onText(e.text);
          else return e;
        }
        if (lost) throw lost;
        if (signal?.aborted) throw new CliError('stopped; the session goes on until it is idle', EXIT.INTERRUPTED);
        if (Date.now() > until) throw new CliError(`no answer after ${Math.round(deadline / 1000)} s: the session's worker may be overloaded or gone (whetstone jobs ${jobId})`, EXIT.JOB_FAILED);
        const before = events.length;
        await next(10_000);
        // Woken by a state change or by silence (not by tokens): is anyone still answering?
        if (events.length === before) {
          const why = await gone();
          if (why) throw new CliError(why, EXIT.JOB_FAILED);
        }
      }
    },
  };
  return new Promise((resolve, reject) => {
    socket.once('connect', () => {
      socket
        .timeout(30_000)
        .emitWithAck('subscribe', { room: runRoom(jobId) })
        .then((answer) => (answer.ok ? resolve(answers) : reject(new CliError(`cannot follow the session ${jobId}: ${answer.error}`, EXIT.NOT_FOUND))))
        .catch(() => reject(new CliError(`the server did not answer the subscription to the session ${jobId}`, EXIT.UNREACHABLE)));
    });
    socket.once('connect_error', (e: Error) => reject(e.message.startsWith('UNAUTHORIZED') ? keyRefused(conn.keySource) : new CliError(`cannot reach ${conn.url} over socket.io: ${e.message}`, EXIT.UNREACHABLE)));
  });
}

/** Waits until a worker holds the session (RUNNING); a session that ends first is a failure. */
async function untilRunning(ctx: CommandContext, conn: Connection, jobId: string, answers: Answers, signal?: AbortSignal): Promise<void> {
  let said = '';
  for (;;) {
    const job = await call(conn, () => conn.api.jobs.get.query({ teamId: conn.teamId, jobId }));
    if (job.state === 'RUNNING') return;
    if (TERMINAL.has(job.state)) throw new CliError(`the inference session ${jobId} is ${job.state}${job.failureReason ? `: ${job.failureReason}` : ''}`, EXIT.JOB_FAILED);
    const waiting = `waiting for a worker to load it (${job.state.toLowerCase()})`;
    if (waiting !== said) ctx.out.note(waiting);
    said = waiting;
    if (signal?.aborted) throw new CliError(`stopped waiting; session ${jobId} stays queued until it is idle (whetstone cancel ${jobId})`, EXIT.INTERRUPTED);
    // The room's `job` event wakes this at once; the poll covers a missed one.
    await answers.changed(2_000);
  }
}
