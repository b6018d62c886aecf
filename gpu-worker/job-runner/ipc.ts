/** Messages between the daemon (RunnerProcess) and a job runner child process (child.ts). */
import { type Assignment, type SampleRequest } from '../../sdk/worker-protocol';
import { type InferenceEvent } from './inference-channel';
import { type StreamKind } from '../../sdk/live';
import { type CheckpointUploadKind, type UploadedCheckpoint } from './sink';
import { type JobResult } from './types';

export type ToRunner =
  | { type: 'start'; assignment: Assignment }
  | { type: 'preempt' }
  | { type: 'cancel' }
  | { type: 'sample'; request: SampleRequest }
  | { type: 'reply'; id: number; ok: true; result: unknown }
  | { type: 'reply'; id: number; ok: false; error: string };

export interface RunnerRequests {
  uploadCheckpoint: { params: { kind: CheckpointUploadKind; step: number; bytes: Uint8Array; agent?: string }; result: UploadedCheckpoint };
  fetchBlob: { params: { key: string }; result: Uint8Array };
  fetchBlobToFile: { params: { key: string; file: string }; result: { bytes: number } };
  environmentSecrets: { params: Record<string, never>; result: Record<string, string> };
}

export type FromRunner =
  | { type: 'ready'; pid: number }
  | { type: 'batch'; kind: StreamKind; items: unknown[] }
  | { type: 'sample'; event: InferenceEvent }
  | { [M in keyof RunnerRequests]: { type: 'request'; id: number; method: M; params: RunnerRequests[M]['params'] } }[keyof RunnerRequests]
  | { type: 'done'; result: JobResult };
