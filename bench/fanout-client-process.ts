/**
 * One process of the fan-out bench's browser clients (started by bench/fanout-clients.ts): it
 * opens its share of the socket.io clients and records, per item of each "stream" batch, how
 * long after the item's `value` (the sender's clock) it arrived. Real browsers are separate
 * processes; with all 100 clients in the bench's process, each batch waited for 100 decodes in
 * series, which measured the bench rather than the server.
 *
 * Times are performance.timeOrigin + performance.now(): wall-clock based, so comparable across
 * processes on this machine (the parent checks the offset, see ClientFleet.clockOffsets).
 */
import { io as connect, type Socket } from 'socket.io-client';
import type { LiveBatch } from '../sdk/live';
import type { FleetCommand, FleetReply } from './fanout-clients';

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let clients: Socket[] = [];
let measuring = false;
let latencies: number[] = [];
/** Per batch seq: the latency of its first item at the first of this process's clients to get it. */
let firstArrival = new Map<number, number>();

/** The bench streams metric batches only (sdk/live.ts), each value the time it was sent. */
function onBatch(batch: Pick<Extract<LiveBatch, { kind: 'metrics' }>, 'seq' | 'items'>): void {
  const t = now();
  if (!measuring) return;
  for (const m of batch.items) latencies.push(t - m.value);
  if (!firstArrival.has(batch.seq)) firstArrival.set(batch.seq, t - batch.items[0].value);
}

async function open(url: string, count: number, authorization: string | undefined): Promise<void> {
  clients = await Promise.all(
    Array.from({ length: count }, async () => {
      const s = connect(url, { forceNew: true, transports: ['websocket'], reconnection: false, ...(authorization ? { extraHeaders: { authorization } } : {}) });
      await new Promise<void>((resolve, reject) => {
        s.once('connect', () => resolve());
        s.once('connect_error', reject);
      });
      s.on('stream', onBatch);
      return s;
    }),
  );
}

/** Joins a room: the server's `subscribe` (with its membership check), or the bare server's `join`. */
async function join(event: 'subscribe' | 'join', room: string): Promise<void> {
  await Promise.all(
    clients.map(async (s) => {
      const ack = (await s.emitWithAck(event, event === 'subscribe' ? { room } : room)) as { ok: boolean; error?: string } | undefined;
      if (ack && !ack.ok) throw new Error(ack.error);
    }),
  );
}

/** `perSecond` echoes a second spread over this process's clients, for `seconds`: round trips. */
async function echo(perSecond: number, seconds: number): Promise<number[]> {
  const rtts: number[] = [];
  const inflight: Promise<void>[] = [];
  const t0 = now();
  for (let i = 0; now() - t0 < seconds * 1000; i++) {
    const due = t0 + (i * 1000) / perSecond;
    if (due > now()) await sleep(due - now());
    const sent = now();
    inflight.push(clients[i % clients.length].emitWithAck('echo', { sent }).then(() => void rtts.push(now() - sent)));
  }
  await Promise.all(inflight);
  return rtts;
}

async function handle(command: FleetCommand): Promise<FleetReply> {
  switch (command.type) {
    case 'open':
      await open(command.url, command.count, command.authorization);
      return { type: 'done' };
    case 'join':
      await join(command.event, command.room);
      return { type: 'done' };
    case 'clock':
      return { type: 'clock', now: now() };
    case 'measure':
      measuring = command.on;
      if (command.on) {
        latencies = [];
        firstArrival = new Map();
      }
      return { type: 'done' };
    case 'arrivals': {
      const reply: FleetReply = { type: 'arrivals', latencies: Float64Array.from(latencies), first: [...firstArrival] };
      latencies = [];
      firstArrival = new Map();
      return reply;
    }
    case 'echo':
      return { type: 'echo', rtts: Float64Array.from(await echo(command.perSecond, command.seconds)) };
    case 'close':
      clients.forEach((c) => c.close());
      clients = [];
      return { type: 'done' };
  }
}

process.on('message', (message: { id: number; command: FleetCommand }) => {
  handle(message.command).then(
    (reply) => process.send!({ id: message.id, reply }),
    (error: unknown) => process.send!({ id: message.id, error: String((error as Error)?.message ?? error) }),
  );
});
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });
