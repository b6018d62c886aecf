/**
 * What the rollout runtime drives: an environment behind a boundary — the QuickJS sandbox for
 * TypeScript environments, HTTP for environments in other languages. Methods are async because
 * the HTTP one is; the sandbox answers synchronously underneath.
 */
import { type BotRequest, type ResetRequest, type ResetResponse, type StepRequest, type StepResponse } from './sandbox/protocol';
import type { EnvironmentDescription } from '../../sdk/dry-run-report';

export type { EnvironmentDescription, ResetRequest, ResetResponse, StepRequest, StepResponse, BotRequest };

export interface EnvironmentHandle {
  readonly description: EnvironmentDescription;
  reset(request: ResetRequest): Promise<ResetResponse>;
  step(request: StepRequest): Promise<StepResponse>;
  /** Asks one of the environment's scripted bots for the current agent's action. */
  bot(request: BotRequest): Promise<string>;
  /** Ends an episode early (ended episodes are closed by the environment itself). */
  close(episodeId: string): Promise<void>;
  dispose(): Promise<void>;
}

/** Receives console output of environment code, per episode where known. */
export type LogSink = (lines: string[], episodeId: string | null) => void;
