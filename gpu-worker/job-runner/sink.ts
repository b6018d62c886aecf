/**
 * Where a job runner's output goes. The runner only knows this interface: in the worker it is the
 * runner child's IPC link to the daemon (which numbers batches, fences and retries them over HTTP),
 * in tests an in-memory sink. Items are exactly the stream items of sdk/live.ts.
 */
import { writeFile } from 'node:fs/promises';
import { type StreamItem, type StreamKind } from '../../sdk/live';

export type CheckpointUploadKind = 'TRAINING' | 'SAMPLER';

export interface UploadedCheckpoint {
  checkpointId: string;
  storageKey: string;
}

export interface JobSink {
  /** One batch of one kind; the transport keeps the order of calls. */
  sendBatch<K extends StreamKind>(kind: K, items: StreamItem<K>[]): void | Promise<void>;
  /**
   * Stores a checkpoint file; resolves once the control plane has it. `agent`: whose policy it is,
   * for a run whose learners learn independently (training.independentLearners); else none.
   */
  uploadCheckpoint(kind: CheckpointUploadKind, step: number, bytes: Uint8Array, agent?: string): Promise<UploadedCheckpoint>;
  /** A blob the job may read (a checkpoint, a dataset), by storage key. */
  fetchBlob(key: string): Promise<Uint8Array>;
  /**
   * The same, written to `file` as it arrives (a model's weights: never whole in memory, and
   * larger than a buffer may be); resolves with the bytes written.
   */
  fetchBlobToFile(key: string, file: string): Promise<{ bytes: number }>;
  /**
   * The values of the team secrets the job's environment names in its headers (names the team
   * has not set are left out). Kept in memory only, for the environment's calls.
   */
  environmentSecrets?(): Promise<Record<string, string>>;
}

/** Asks a running job to stop. Read by the runner between steps. */
export class JobControl {
  private preemptFlag = false;
  private cancelFlag = false;
  private readonly waiters: (() => void)[] = [];

  /** Checkpoint, then stop with outcome "preempted". */
  preempt(): void {
    this.preemptFlag = true;
    this.wake();
  }

  /** Stop at once with outcome "cancelled", without a checkpoint. */
  cancel(): void {
    this.cancelFlag = true;
    this.wake();
  }

  get preempted(): boolean {
    return this.preemptFlag;
  }

  get cancelled(): boolean {
    return this.cancelFlag;
  }

  /** Resolves on the next preempt or cancel request (for waits inside a job). */
  changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private wake() {
    for (const w of this.waiters.splice(0)) w();
  }
}

/** Keeps everything in memory: for tests, and for running a job without a server. */
export class MemorySink implements JobSink {
  readonly batches: { kind: StreamKind; items: unknown[] }[] = [];
  readonly checkpoints: { kind: CheckpointUploadKind; step: number; bytes: Uint8Array; storageKey: string; agent?: string }[] = [];
  readonly blobs = new Map<string, Uint8Array>();
  /** The team secrets the job's environment may use, by name. */
  secrets: Record<string, string> = {};
  /** Called after every batch (tests use it to preempt or cancel at a given point). */
  onBatch: ((kind: StreamKind, items: unknown[]) => void) | null = null;
  private counter = 0;

  sendBatch<K extends StreamKind>(kind: K, items: StreamItem<K>[]): void {
    // A copy through JSON, as the wire would make it.
    const copy = JSON.parse(JSON.stringify(items)) as unknown[];
    this.batches.push({ kind, items: copy });
    this.onBatch?.(kind, copy);
  }

  async uploadCheckpoint(kind: CheckpointUploadKind, step: number, bytes: Uint8Array, agent?: string): Promise<UploadedCheckpoint> {
    const storageKey = `checkpoints/mem-${this.counter++}`;
    this.blobs.set(storageKey, bytes.slice());
    this.checkpoints.push({ kind, step, bytes: bytes.slice(), storageKey, ...(agent === undefined ? {} : { agent }) });
    return { checkpointId: `ckpt-${this.counter}`, storageKey };
  }

  async fetchBlob(key: string): Promise<Uint8Array> {
    const blob = this.blobs.get(key);
    if (!blob) throw new Error(`no blob "${key}"`);
    return blob.slice();
  }

  async fetchBlobToFile(key: string, file: string): Promise<{ bytes: number }> {
    const blob = await this.fetchBlob(key);
    await writeFile(file, blob);
    return { bytes: blob.byteLength };
  }

  async environmentSecrets(): Promise<Record<string, string>> {
    return { ...this.secrets };
  }

  items<K extends StreamKind>(kind: K): StreamItem<K>[] {
    return this.batches.filter((b) => b.kind === kind).flatMap((b) => b.items as StreamItem<K>[]);
  }
}
