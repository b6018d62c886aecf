import { io as connectSocket, type Socket } from 'socket.io-client';
import type { Api, Connection } from './client';
import { CliError, EXIT, keyRefused } from './errors';

// Following a run live: socket.io room run:<jobId> for stream batches and state changes, with a
// catch-up from runs.since after every (re)connect and a slow poll of jobs.get as the fallback,
// so that nothing is missed when the socket drops and the end is seen even without it.

export const TERMINAL_STATES = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

export type JobDetail = Awaited<ReturnType<Api['jobs']['get']['query']>>;
export interface MetricItem {
  step: number;
  key: string;
  value: number;
}
export interface LogItem {
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
  let afterMetricId = 0n;
  let afterLogId = 0n;
  let lastAnswer = Date.now();
  let finished = false;
  let socket: Socket | null = null;
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
      const fresh = items.filter((l) => !seenLogs.has(String(l.id)));
      for (const l of fresh) seenLogs.add(String(l.id));
      if (fresh.length > 0) o.onLogs?.(fresh);
    };

    let catchingUp: Promise<void> | null = null;
    const catchUp = () => {
      catchingUp ??= (async () => {
        try {
          for (let page = 0; page < 1000; page++) {
            const got = await conn.api.runs.since.query({ teamId: conn.teamId, jobId, afterMetricId, afterLogId });
            if (finished) return;
            lastAnswer = Date.now();
            if (got.metrics.length > 0) {
              afterMetricId = got.metrics[got.metrics.length - 1].id;
              o.onMetrics?.(got.metrics);
            }
            if (got.logs.length > 0) {
              afterLogId = got.logs[got.logs.length - 1].id;
              logs(got.logs.map((l) => ({ ...l, id: l.id.toString() })));
            }
            if (got.complete) break;
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
        const answer = (await socket!.emitWithAck('subscribe', { room: `run:${jobId}` })) as { ok: boolean; error?: string };
        if (!answer.ok) return fail(new CliError(`cannot follow job ${jobId}: ${answer.error ?? 'refused'}`, answer.error?.startsWith('NOT_FOUND') ? EXIT.NOT_FOUND : EXIT.UNAUTHORIZED));
        // Joined: whatever was stored before now comes from the catch-up, the rest live.
        await catchUp().catch(() => undefined);
        await check();
      })().catch(fail);
    });
    socket.on('disconnect', () => o.onConnection?.(false));
    socket.on('connect_error', (e: Error) => {
      if (e.message.startsWith('UNAUTHORIZED')) fail(keyRefused(conn.keySource));
    });
    socket.on('stream', (batch: { jobId: string; kind: string; items: unknown[] }) => {
      if (batch.jobId !== jobId) return;
      if (batch.kind === 'metrics') {
        const items = batch.items as Array<MetricItem & { id: string }>;
        for (const m of items) if (BigInt(m.id) > afterMetricId) afterMetricId = BigInt(m.id);
        o.onMetrics?.(items);
      } else if (batch.kind === 'logs') {
        const items = batch.items as LogItem[];
        for (const l of items) if (BigInt(l.id) > afterLogId) afterLogId = BigInt(l.id);
        logs(items);
      }
    });
    socket.on('job', (event: { jobId: string }) => {
      if (event.jobId === jobId) void check();
    });
    timer = setInterval(() => {
      void check();
      if (!socket?.connected) void catchUp().catch(() => undefined);
    }, pollMs);
    void check();
  });
}
