// How the daemon talks to the control plane: HTTP with the worker's credential, and the
// socket.io connection (namespace /workers) when it is up. Start, finish and stream batches go
// over the socket with an ack that carries the HTTP route's answer, else over HTTP; either way a
// refusal is an HttpStatusError with the status, so callers handle one kind of answer.
import fs from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Socket } from 'socket.io-client';
import { callAckSchema, STREAM_EVENT, STREAM_SOCKET_MAX_BYTES, streamAckSchema } from '../../sdk/worker-protocol';
import type { StreamKind } from '../../sdk/live';

export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}: ${body.slice(0, 300)}`);
  }
}

/** This machine's own failure (a full disk, a folder it may not write): no retry mends it. */
export class LocalWriteError extends Error {}

/** Transient: the network, a timeout, or a server error. Retried with backoff. */
export function transient(e: unknown): boolean {
  if (e instanceof LocalWriteError) return false;
  return !(e instanceof HttpStatusError) || e.status >= 500 || e.status === 429;
}

/** The server refused the write because the lease moved on (a stale fencing token). */
export const fenced = (e: unknown): boolean => e instanceof HttpStatusError && e.status === 409;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
export const backoff = (failures: number, base = 250, max = 15_000) => Math.min(max, base * 2 ** Math.min(failures, 16)) * (0.75 + Math.random() * 0.5);

/** Retries transient failures with exponential backoff until `giveUp` says so. */
export async function retry<T>(fn: () => Promise<T>, giveUp: () => boolean): Promise<T> {
  for (let failures = 0; ; failures++) {
    try {
      return await fn();
    } catch (e) {
      if (!transient(e) || giveUp()) throw e;
      await sleep(backoff(failures));
    }
  }
}

/** A stream batch as the server takes it (sdk/worker-protocol.ts). */
export interface StreamBatchBody {
  attemptId: string;
  fencingToken: string;
  seq: number;
  kind: StreamKind;
  items: unknown[];
}

export class WorkerTransport {
  /** The worker's credential (wsw_…), once registered. */
  credential: string | null = null;
  /** The push channel; the daemon (re)connects it. */
  socket: Socket | null = null;

  constructor(readonly server: string) {}

  get connected(): boolean {
    return Boolean(this.socket?.connected);
  }

  /** Start or finish: over the socket when it is connected (the ack carries the HTTP answer), else over HTTP. */
  async call(event: string, route: string, body: unknown): Promise<void> {
    const socket = this.socket;
    if (!socket?.connected) {
      await this.json('POST', route, body);
      return;
    }
    // A disconnect fails the ack at once (socket.io-client), and the retry goes over HTTP.
    const answer = callAckSchema.safeParse(await socket.timeout(30_000).emitWithAck(event, body));
    if (!answer.success) throw new Error(`the server answered ${event} with something else than an ack`);
    if (answer.data.status >= 300) throw new HttpStatusError(answer.data.status, answer.data.error ?? '');
  }

  /** One batch, over the socket when it is connected (acked once stored), else over HTTP. */
  async sendBatch(body: StreamBatchBody): Promise<void> {
    const socket = this.socket;
    const text = JSON.stringify(body);
    if (!socket?.connected || text.length > STREAM_SOCKET_MAX_BYTES) {
      await this.request('POST', '/api/workers/stream', { body: new TextEncoder().encode(text), contentType: 'application/json' });
      return;
    }
    // A disconnect fails the ack at once (socket.io-client), and the retry goes over HTTP.
    const answer = streamAckSchema.safeParse(await socket.timeout(30_000).emitWithAck(STREAM_EVENT, body));
    if (!answer.success) throw new Error('the server answered a stream batch with something else than an ack');
    if (answer.data.status >= 300) throw new HttpStatusError(answer.data.status, answer.data.error ?? '');
  }

  async json(method: string, route: string, body: unknown, auth = true): Promise<unknown> {
    const bytes = await this.request(method, route, { body: new TextEncoder().encode(JSON.stringify(body)), contentType: 'application/json', auth });
    return bytes.byteLength === 0 ? null : (JSON.parse(new TextDecoder().decode(bytes)) as unknown);
  }

  /**
   * GET a route's body into `file` as it arrives. A download may take long (a model's weights),
   * so the limit is on silence: it is stopped after `idleMs` without a byte.
   */
  async download(route: string, file: string, idleMs = 60_000): Promise<{ bytes: number }> {
    const abort = new AbortController();
    let timer = setTimeout(() => abort.abort(new Error(`no data for ${idleMs / 1000} s`)), idleMs);
    const alive = () => {
      clearTimeout(timer);
      timer = setTimeout(() => abort.abort(new Error(`no data for ${idleMs / 1000} s`)), idleMs);
    };
    try {
      const res = await fetch(this.server + route, { headers: this.credential ? { authorization: `Bearer ${this.credential}` } : {}, signal: abort.signal });
      if (!res.ok || !res.body) throw new HttpStatusError(res.status, await res.text());
      let bytes = 0;
      const counted = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          alive();
          done(null, chunk);
        },
      });
      const out = fs.createWriteStream(file);
      let writeFailed: Error | null = null;
      out.once('error', (err) => (writeFailed = err));
      try {
        await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), counted, out, { signal: abort.signal });
      } catch (err) {
        if (writeFailed) throw new LocalWriteError(`cannot write ${file}: ${(writeFailed as Error).message}`);
        throw err;
      }
      return { bytes };
    } catch (err) {
      // Said as why it stopped (a silence of idleMs), not as an abort: the caller retries it.
      throw abort.signal.aborted ? (abort.signal.reason as Error) : err;
    } finally {
      clearTimeout(timer);
    }
  }

  async request(
    method: string,
    route: string,
    options: { body?: Uint8Array; contentType?: string; auth?: boolean; timeoutMs?: number } = {},
  ): Promise<Uint8Array> {
    const headers: Record<string, string> = {};
    if (options.contentType) headers['content-type'] = options.contentType;
    if (options.auth !== false && this.credential) headers.authorization = `Bearer ${this.credential}`;
    const res = await fetch(this.server + route, {
      method,
      headers,
      body: options.body ? new Uint8Array(options.body) : undefined,
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    });
    const data = new Uint8Array(await res.arrayBuffer());
    if (!res.ok) throw new HttpStatusError(res.status, new TextDecoder().decode(data));
    return data;
  }
}
