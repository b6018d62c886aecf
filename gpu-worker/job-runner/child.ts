/**
 * Entry point of a job runner child process (forked by RunnerProcess): one assignment, then exit.
 * Stream batches go to the daemon as IPC messages in order; checkpoint uploads and blob fetches
 * are requests the daemon answers. Preempt and cancel arrive as messages and are read between
 * steps. The process exits with its parent: an orphaned trainer would hold memory and a device.
 */
import { initBackend } from '../engine/backend';
import { type FromRunner, type RunnerRequests, type ToRunner } from './ipc';
import { InferenceChannel } from './inference-channel';
import { runJob } from './run-job';
import { JobControl, type JobSink } from './sink';

const control = new JobControl();
const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
let nextId = 1;
let started = false;

function send(msg: FromRunner): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) return reject(new Error('not a child process'));
    process.send(msg, undefined, {}, (err) => (err ? reject(err) : resolve()));
  });
}

function request<M extends keyof RunnerRequests>(method: M, params: RunnerRequests[M]['params']): Promise<RunnerRequests[M]['result']> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
    send({ type: 'request', id, method, params } as FromRunner).catch(reject);
  });
}

/** Sampling requests of an INFERENCE job; answers go to the daemon in order, like batches. */
const inference = new InferenceChannel((event) => send({ type: 'sample', event }).catch(() => undefined));

const sink: JobSink = {
  sendBatch: (kind, items) => send({ type: 'batch', kind, items }),
  uploadCheckpoint: (kind, step, bytes, agent) => request('uploadCheckpoint', { kind, step, bytes, agent }),
  fetchBlob: async (key) => new Uint8Array(await request('fetchBlob', { key })),
  // The daemon writes the file itself (the two share the machine's disk): the bytes never cross IPC.
  fetchBlobToFile: (key, file) => request('fetchBlobToFile', { key, file }),
  environmentSecrets: () => request('environmentSecrets', {}),
};

process.on('message', (msg: ToRunner) => {
  switch (msg.type) {
    case 'start':
      if (started) return;
      started = true;
      void (async () => {
        const result = await initBackend(process.env.WHETSTONE_BACKEND)
          .then(() => runJob(msg.assignment, sink, control, { inference }))
          .catch((e: unknown) => ({ outcome: 'failed' as const, reason: `runner: ${(e as Error).message}` }));
        await send({ type: 'done', result });
        process.disconnect();
      })();
      return;
    case 'preempt':
      control.preempt();
      return;
    case 'cancel':
      control.cancel();
      return;
    case 'sample':
      inference.push(msg.request);
      return;
    case 'reply': {
      const p = pending.get(msg.id);
      if (!p) return;
      pending.delete(msg.id);
      if (msg.ok) p.resolve(msg.result);
      else p.reject(new Error(msg.error));
      return;
    }
  }
});

process.on('disconnect', () => process.exit(started ? 0 : 1));
// SIGTERM is the daemon's to act on: a plain `scancel` (and systemd stopping a unit) sends it to
// every process of the job, and the daemon drains, asking this runner to checkpoint and stop
// (preempt). Dying on it here would lose the progress since the last periodic checkpoint. The
// runner still ends when the daemon says so, when the daemon goes (disconnect, above) or by the
// SIGKILL that follows (the daemon's own kill, or Slurm's after KillWait).
process.on('SIGTERM', () => {});
void send({ type: 'ready', pid: process.pid });
