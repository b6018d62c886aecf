/**
 * The messages between the host and the driver that runs inside the sandbox. Everything crosses
 * as one JSON string each way; the host validates every response (see validate-response.ts).
 */
import { type Json } from '../../../sdk/environment/schema';
import type { EnvironmentDescription, ToolCallRecord } from '../../../sdk/dry-run-report';

export interface ResetRequest {
  episodeId: string;
  /** Seeds the episode's rng. */
  seed: number;
  /** Seeds `sample(rng)`: episodes of one GRPO group share it, so they share the task. */
  taskSeed: number;
  /** The dataset row, for data-dependent environments. */
  row?: Json;
  /** The task of a data-free environment, given instead of sampled (reward tests). */
  task?: Json;
}

export interface AgentTurnMessage {
  agent: string;
  observation: string;
  /** The closed set of actions the agent may take (legal moves); the policy is constrained to them. */
  actions?: string[];
}

export interface ResetResponse {
  turn: AgentTurnMessage;
  systemPrompts: Record<string, string>;
  task: Json;
}

export interface StepRequest {
  episodeId: string;
  action: string;
}

export interface StepResponse {
  /** One entry per agent (0 when the environment gave none). */
  rewards: Record<string, number>;
  terminated: boolean;
  truncated: boolean;
  info: Record<string, Json>;
  /** Absent exactly when the episode ended. */
  next: AgentTurnMessage | null;
  /** Present when the action was a tool call the runtime handled. */
  tool: ToolCallRecord | null;
}

export interface BotRequest {
  episodeId: string;
  bot: string;
}

/** Turns to see through the environment's symmetries (warm-start augmentation). */
export interface SymmetriesRequest {
  turns: { agent: string; observation: string; action: string }[];
}

/** Per turn, the same turn in every symmetric position, the k-th entry the same symmetry for every turn. */
export interface SymmetriesResponse {
  turns: { observation: string; action: string }[][];
}

export interface SandboxErrorPayload {
  name: string;
  message: string;
  stack: string;
  /** The user function that was running (reset, step, sample, a tool, a bot…). */
  during: string;
  /** True when the driver rejected the user's output rather than the user's code throwing. */
  invalidOutput: boolean;
}

export type DriverResponse =
  | { ok: true; value: Json; logs: string[] }
  | { ok: false; error: SandboxErrorPayload; logs: string[] };

export interface DriverMethods {
  describe: { request: Record<string, never>; response: EnvironmentDescription };
  reset: { request: ResetRequest; response: ResetResponse };
  step: { request: StepRequest; response: StepResponse };
  bot: { request: BotRequest; response: { action: string } };
  close: { request: { episodeId: string }; response: { open: number } };
  symmetries: { request: SymmetriesRequest; response: SymmetriesResponse };
  /** The cases of the bundled tests.ts (compiled with `tests`, compile.ts), checked by the host (reward-tests.ts). */
  tests: { request: Record<string, never>; response: { cases: Json[] } };
}

export type DriverMethod = keyof DriverMethods;

/** The global the driver installs in the sandbox: request JSON in, response JSON out. */
export const DISPATCH_GLOBAL = '__whetstone_dispatch';
