import { io as connectSocket, type Socket } from 'socket.io-client';
import type { Api, Connection } from './client';
import { type ClientToServerEvents, type LiveItem, liveBatchSchema, runRoom, type ServerToClientEvents } from '../live';
import { StreamCursor } from '../stream-cursor';
import { CliError, EXIT, keyRefused } from './errors';

// Following a run live: socket.io room run:<jobId> for stream batches and state changes, with a
// catch-up from runs.since after every (re)connect and a slow poll of jobs.get as the fallback,
// so that nothing is missed when the socket drops and the end is seen even without it.

const TERMINAL_STATES = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

export type JobDetail = Awaited<ReturnType<Api['jobs']['get']['query']>>;
export type MetricItem = LiveItem<'metrics'>;
/** A log line from a live batch or a catch-up, deduplicated by id. */
export interface LogItem {
  /** attempt:seq:line, unique per run. */
  id: string;
  level: string;
  message: string;
  time: string | Date;
}

export interface WatchHandlers {
  onMetrics?(items: MetricItem[]): void;
  onLogs?(items: LogItem[]): void;
  /** Every time the job is read (on a `job` event and on each poll). */
  onJob?(job: JobDetail): void;
  /** The connection to the server was lost or came back. */
  onConnection?(connected: boolean): void;
}

export interface WatchOptions extends WatchHandlers {
  conn: Connection;
  jobId: string;
  signal?: AbortSignal;
  /** How often the job is polled (the fallback to pushed `job` events). */
  pollMs?: number;
  /** Give up after the server has not answered for this long. */
  giveUpMs?: number;
}

/**
 * Resolves with the job once it is SUCCEEDED, FAILED or CANCELLED. Everything the run logged and
 * measured before the watch started comes first (the catch-up), then what it streams.
 */
export function watchJob(o: WatchOptions): Promise<JobDetail> {
  const { conn, jobId } = o;
  const pollMs = o.pollMs ?? 2_000;
  const giveUpMs = o.giveUpMs ?? 60_000;
  const seenLogs = new Set<string>();
  // Where a catch-up starts: after what was seen live or caught up (sdk/stream-cursor.ts).
  const cursor = new StreamCursor();
  const logId = (l: { attempt: number; seq: number; line: number }) => `${l.attempt}:${l.seq}:${l.line}`;
  let lastAnswer = Date.now();
  let finished = false;
  let socket: Socket<ServerToClientEvents, ClientToServerEvents> | null = null;
  let timer: NodeJS.Timeout | null = null;

  return new Promise<JobDetail>((resolve, reject) => {
    const cleanup = () => {
      finished = true;
      if (timer) clearInterval(timer);
      socket?.removeAllListeners();
      socket?.close();
      o.signal?.removeEventListener('abort', onAbort);
    };
    const fail = (error: unknown) => {
      if (finished) return;
      cleanup();
      reject(error instanceof CliError ? error : conn.fail(error));
    };
    const onAbort = () => fail(new CliError(`stopped watching; job ${jobId} goes on (whetstone logs ${jobId} --follow, whetstone cancel ${jobId})`, EXIT.INTERRUPTED));
    if (o.signal?.aborted) return onAbort();
    o.signal?.addEventListener('abort', onAbort);

    const logs = (items: LogItem[]) => {
      const fresh = items.filter((l) => !seenLogs.has(l.id));
      for (const l of fresh) seenLogs.add(l.id);
      if (fresh.length > 0) o.onLogs?.(fresh);
    };

    let catchingUp: Promise<void> | null = null;
    const catchUp = () => {
      catchingUp ??= (async () => {
        try {
          let after = cursor.after;
          for (let page = 0; page < 1000; page++) {
            const got = await conn.api.runs.since.query({ teamId: conn.teamId, jobId, after });
            if (finished) return;
            lastAnswer = Date.now();
            if (got.metrics.length > 0) o.onMetrics?.(got.metrics.map(({ key, step, value }) => ({ key, step, value })));
            if (got.logs.length > 0) logs(got.logs.map((l) => ({ id: logId(l), level: l.level, message: l.message, time: l.time })));
            for (const row of [...got.metrics, ...got.logs, ...got.rollouts]) cursor.saw(row);
            if (got.complete || !got.through) break;
            after = got.through;
          }
        } finally {
          catchingUp = null;
        }
      })();
      return catchingUp;
    };

    let checking = false;
    const check = async () => {
      if (checking || finished) return;
      checking = true;
      try {
        const job = await conn.api.jobs.get.query({ teamId: conn.teamId, jobId });
        lastAnswer = Date.now();
        if (finished) return;
        o.onJob?.(job);
        if (TERMINAL_STATES.has(job.state)) {
          await catchUp();
          if (finished) return;
          cleanup();
          resolve(job);
        }
      } catch (e) {
        const error = conn.fail(e);
        if (error.exitCode !== EXIT.UNREACHABLE || Date.now() - lastAnswer > giveUpMs) fail(error);
      } finally {
        checking = false;
      }
    };

    socket = connectSocket(conn.url, {
      path: '/socket.io',
      transports: ['websocket'],
      extraHeaders: { authorization: `Bearer ${conn.apiKey}` },
      reconnectionDelayMax: 5_000,
    });
    socket.on('connect', () => {
      o.onConnection?.(true);
      void (async () => {
        const answer = await socket!.emitWithAck('subscribe', { room: runRoom(jobId) });
        if (!answer.ok) return fail(new CliError(`cannot follow job ${jobId}: ${answer.error}`, answer.error.startsWith('NOT_FOUND') ? EXIT.NOT_FOUND : EXIT.UNAUTHORIZED));
        // Joined: whatever was stored before now comes from the catch-up, the rest live.
        await catchUp().catch(() => undefined);
        await check();
      })().catch(fail);
    });
    socket.on('disconnect', () => o.onConnection?.(false));
    socket.on('connect_error', (e: Error) => {
      if (e.message.startsWith('UNAUTHORIZED')) fail(keyRefused(conn.keySource));
    });
    socket.on('stream', (payload) => {
      // Checked at the edge: a batch of a shape this CLI does not know (a server of another
      // version) is skipped rather than shown wrong; added fields pass (zod drops them).
      const parsed = liveBatchSchema.safeParse(payload);
      if (!parsed.success || parsed.data.jobId !== jobId) return;
      const batch = parsed.data;
      cursor.saw(batch);
      if (batch.kind === 'metrics') {
        o.onMetrics?.(batch.items);
      } else if (batch.kind === 'logs') {
        logs(batch.items.map((l) => ({ id: logId({ ...batch, line: l.line }), level: l.level, message: l.message, time: l.time })));
      }
    });
    socket.on('job', (event) => {
      if (event.jobIds.includes(jobId)) void check();
    });
    timer = setInterval(() => {
      void check();
      if (!socket?.connected) void catchUp().catch(() => undefined);
    }, pollMs);
    void check();
  });
}
