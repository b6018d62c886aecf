/** What every kind of job returns, and the options the runner takes. */
import type { InferenceChannel } from './inference-channel';

/** `lost`: the device failed under the job (see finishRequestSchema); it is requeued. */
export type JobOutcome = 'succeeded' | 'failed' | 'preempted' | 'cancelled' | 'lost';

export interface JobResult {
  outcome: JobOutcome;
  /** Why it failed or stopped, in words for the UI; empty on success. */
  reason: string;
}

/** A failure whose message is the reason shown to the user (bad config, missing input). */
export class JobFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobFailure';
  }
}

export interface RunOptions {
  /** Episodes per step whose sequences are streamed as rollout samples. Default 4. */
  samplesPerStep?: number;
  /** Multi-agent: matches streamed per step. Default 2. */
  matchesPerStep?: number;
  /** Called after each completed step, with its number (counted from 1: sdk/live.ts, stepNumber). */
  onStep?: (step: number) => void;
  /** INFERENCE: where sampling requests arrive and answers go (the child's IPC link to the daemon). */
  inference?: InferenceChannel;
}
