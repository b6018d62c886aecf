// The round thread (round-thread.ts starts it by path): runs each round it is asked for, with a
// database pool of its own, and posts the round's events back in batches for the server's
// sockets, then the round's summary.
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createDb } from '../db/client';
import { runRound, type SchedulerEvents } from './loop';
import { Planner } from './planner';
import type { RoundEvent, RoundMessage, RoundRequest } from './round-thread';

// The round yields the CPU to the server's event loop: on Linux a nice value is a thread's own
// (setpriority on the calling thread), so this lowers the round's thread only, and the API,
// socket.io and the worker protocol keep their latency while a large round competes for the cores.
// Where it cannot be set (another OS's semantics, a sandbox), the round runs at the same priority.
try {
  os.setPriority(0, 10);
} catch {
  // as the comment says
}

const port = parentPort!;
const post = (message: RoundMessage) => port.postMessage(message);
// Two connections: a round's reads run together (loop.ts: loadRound), its writes one by one.
const db = createDb((workerData as { databaseUrl: string }).databaseUrl, 4);

/** Events go out together at the end of this turn of the thread's event loop, at most 1,000 a message. */
const EVENTS_PER_MESSAGE = 1_000;
let round = 0;
let outbox: RoundEvent[] = [];
function flush(): void {
  if (outbox.length === 0) return;
  post({ id: round, events: outbox });
  outbox = [];
}
function raise(event: RoundEvent): void {
  if (outbox.length === 0) setImmediate(flush);
  outbox.push(event);
  if (outbox.length >= EVENTS_PER_MESSAGE) flush();
}
const events: SchedulerEvents = {
  assigned: (...args) => raise({ type: 'assigned', args }),
  signal: (...args) => raise({ type: 'signal', args }),
  jobChanged: (...args) => raise({ type: 'jobChanged', args }),
};

// The thread lives as long as the leader's loop: its planner keeps its indexes from one round to
// the next (planner.ts), so a round costs about what changed since the last one.
const planner = new Planner();

// The loop asks for one round at a time.
port.on('message', async ({ id, now, housekeeping, gate }: RoundRequest) => {
  // Tests hold the round until they have seen the server answer meanwhile (round-thread.test.ts).
  if (gate) Atomics.wait(gate, 0, 0);
  round = id;
  try {
    const { placed, preempted, waiting } = await runRound(db, events, new Date(now), { housekeeping, planner, log: (line) => post({ id, log: line }) });
    flush();
    post({ id, done: { placed, preempted, waiting } });
  } catch (error) {
    flush();
    post({ id, error: (error as Error).message });
  }
});
post({ ready: true });
