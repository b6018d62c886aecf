// The dry-run report: what the server answers when an environment version is saved, and what the
// CLI prints from it (sdk/cli/validation.ts). The runtime that produces it (gpu-worker/runtime)
// imports these types from here, so that the CLI and the server read the report without
// importing the runtime.
import type { DatasetProblem } from './dataset';
import type { ContextPolicy, EnvironmentKind } from './environment/define';
import type { Json, ObjectSchema } from './environment/schema';
import type { RewardExpectation } from './environment/tests';
import type { Manifest } from './manifest';

export interface SourceLocation {
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
}

export interface CompileDiagnostic {
  message: string;
  location: SourceLocation | null;
  /** The source line, for an editor marker or a caret under the column. */
  lineText: string;
  /** Characters the problem spans from `location` (type errors say; absent for syntax errors): an editor marker's extent. */
  length?: number;
}

export type SandboxErrorKind =
  /** TypeScript that does not compile. */
  | 'syntax'
  /** The module threw while loading, or has no valid default export. */
  | 'load'
  /** User code threw. */
  | 'throw'
  /** A call ran past its CPU deadline (infinite loop). */
  | 'timeout'
  /** The sandbox's memory limit was hit. */
  | 'memory'
  /** Recursion too deep for the sandbox's stack limit. */
  | 'stack-overflow'
  /** User code returned something the runtime cannot use (NaN reward, wrong shape). */
  | 'invalid-output'
  /** A response larger than the output limit. */
  | 'output-too-large'
  /** The sandbox itself failed; it has been replaced. */
  | 'crash'
  /** An HTTP environment did not answer (down, timed out, 5xx after retries). */
  | 'unavailable'
  /** An HTTP environment answered with something outside the protocol. */
  | 'protocol';

export interface SandboxErrorJson {
  kind: SandboxErrorKind;
  during: string;
  message: string;
  location: SourceLocation | null;
  userStack: string;
}

export interface EnvironmentDescription {
  kind: EnvironmentKind;
  name: string;
  description: string;
  agents: string[];
  context: ContextPolicy;
  rowSchema: ObjectSchema | null;
  tools: { name: string; description: string; parameters: ObjectSchema }[];
  /** A paragraph listing the tools and the call syntax, for the system prompt. Empty without tools. */
  toolPrompt: string;
  bots: string[];
  /** Whether the environment defines `symmetries` (warm-start augmentation); absent means no. */
  symmetries?: boolean;
  /** QuickJS stack of the define call, for locating errors the driver detects in the user's output. */
  definedAt: string;
}

export interface ToolCallRecord {
  name: string | null;
  ok: boolean;
  error?: string;
}

export interface TranscriptTurn {
  agent: string;
  observation: string;
  action: string;
  rewards: Record<string, number>;
  info: Record<string, Json>;
  tool: ToolCallRecord | null;
}

export type EndReason = 'terminated' | 'truncated' | 'max-turns' | 'error';

export interface Transcript {
  episodeId: string;
  seed: number;
  task: Json;
  systemPrompts: Record<string, string>;
  turns: TranscriptTurn[];
  endReason: EndReason;
  /** Sum of each agent's rewards over the episode. */
  totalRewards: Record<string, number>;
  /** The info of the last step (a game's result lives here). */
  finalInfo: Record<string, Json>;
  error: SandboxErrorJson | null;
}

export interface Distribution {
  count: number;
  mean: number;
  std: number;
  min: number;
  max: number;
  /** Distinct values (rounded to 3 decimals) with counts, most frequent first, at most 12. */
  histogram: { value: number; count: number }[];
}

/** One reward test of the environment's tests.ts (sdk/environment/tests.ts), as run after the dry run. */
export interface RewardTestResult {
  name: string;
  pass: boolean;
  /** The case's expectation, as written. */
  expected: RewardExpectation;
  /** The checked agent's rewards summed over the actions played; null when the case could not run. */
  actual: number | null;
  /** The last step's info (what an `info` expectation is checked against). */
  info: Record<string, Json>;
  /** Why a case that ran did not pass ("expected reward 1, got 0"); null when it passed or hit an error. */
  failure: string | null;
  /** The user's code threw, or the case itself is wrong: located in the user's files. */
  error: SandboxErrorJson | null;
  /** Where the case is written (the line of its name in tests.ts), for an editor marker. */
  location: SourceLocation | null;
}

export interface DryRunError extends SandboxErrorJson {
  episodes: number;
}

/** The system prompt an agent's policy reads: the environment's, then its tool paragraph. */
export function agentSystemPrompt(systemPrompt: string, toolPrompt: string): string {
  return [systemPrompt, toolPrompt].filter((s) => s !== '').join('\n\n');
}

export interface DryRunReport {
  ok: boolean;
  compileErrors: CompileDiagnostic[];
  /** The module failed to load (thrown at top level, no default export). */
  loadError: SandboxErrorJson | null;
  description: EnvironmentDescription | null;
  /** Mismatches between the manifest and the code (agents, kind). */
  warnings: string[];
  /** Dataset lines that are not JSON or do not match rowSchema. */
  datasetProblems: (DatasetProblem & { path: string })[];
  policy: 'bots' | 'random';
  episodes: number;
  endReasons: Record<EndReason, number>;
  /** Turns per episode (all agents). */
  lengths: Distribution;
  /** Episode return per agent. */
  rewards: Record<string, Distribution>;
  /** Distinct errors, each with how many episodes hit it. */
  errors: DryRunError[];
  transcripts: Transcript[];
  logs: string[];
  /**
   * The reward tests of tests.ts, in order; empty without the file. A failing test does not make
   * the report fail (`ok`): the version can still be trained, and the editor shows the failures.
   */
  tests: RewardTestResult[];
  /**
   * TypeScript errors of the user's files against the SDK's declarations. They do not make the
   * report fail either: esbuild strips types, so the code runs as the dry run shows.
   */
  typeErrors: CompileDiagnostic[];
  /** How long the type check took; null when it did not run (compile errors, stopped, TypeScript absent). */
  typeCheckMs: number | null;
  durationMs: number;
  /** How long the save waited for a free dry-run process, and how many dry runs were ahead of it. */
  queue?: { waitedMs: number; ahead: number };
}

/** The first thing a failed dry run names, in a line: for "version N failed its dry run: …". */
export function firstProblem(report: DryRunReport): string {
  const at = (l: SourceLocation | null | undefined) => (l ? ` (${l.file}:${l.line})` : '');
  const compile = report.compileErrors[0];
  if (compile) return `${compile.message}${at(compile.location)}`;
  if (report.loadError) return report.loadError.message;
  const error = report.errors[0];
  if (error) return `${error.message} (in ${error.episodes} episode${error.episodes === 1 ? '' : 's'})`;
  const problem = report.datasetProblems[0];
  if (problem) return `${problem.path} line ${problem.line}: ${problem.message}`;
  return report.warnings[0] ?? (report.episodes === 0 ? 'no episode completed' : 'it did not pass');
}

/**
 * A dry run asked of a dry-run process (gpu-worker/runtime/dry-run-process.ts), which the server's
 * pool (server/environments/dry-run-pool.ts) starts by path: user code never runs on the server's
 * own event loop.
 */
export interface DryRunRequest {
  source: { files: Record<string, string>; entry: string };
  manifest: { kind: EnvironmentKind; agents: string[]; limits: { maxTurns: number; maxTokensPerTurn: number; maxResponseTokens: number }; server?: Manifest['server'] };
  dataset?: { path: string; text: string };
  /** The team's values of the secrets the manifest's headers name (sdk/team-secrets.ts); never in the report. */
  secrets?: Record<string, string>;
  episodes: number;
  /** The whole dry run's wall-clock budget: past it the run is not a pass. */
  timeBudgetMs: number;
}

/** Messages of the dry-run process to the pool: up, progress (for a report when it is stopped), and the report. */
export type DryRunProcessMessage =
  | { type: 'ready' }
  | { type: 'progress'; id: number; episodes: number; description: EnvironmentDescription | null }
  /** The dry run and its reward tests are done; the type check starts (the answer if it is stopped). */
  | { type: 'checking-types'; id: number; report: DryRunReport }
  | { type: 'report'; id: number; report: DryRunReport };

/** What the pool sends a dry-run process: one dry run at a time, or "load TypeScript now" while it is idle. */
export type DryRunProcessCommand = { type: 'run'; id: number; request: DryRunRequest } | { type: 'warm' };

/** A dry run stopped by its budget, as an error of its report (by the dry run itself, or by the pool that had to stop its process). */
export function tooLongError(done: number, episodes: number, budgetMs: number): DryRunError {
  const message = `the dry run took too long: ${done} of ${episodes} episodes in ${Math.round(budgetMs / 1000)} s (each episode must be quick: training plays thousands)`;
  return { kind: 'timeout', during: 'dry run', message, location: null, userStack: '', episodes: episodes - done };
}

/** A report of nothing yet: not a pass, no episode; the dry run fills it in. */
export function emptyReport(policy: DryRunReport['policy'] = 'bots'): DryRunReport {
  return {
    ok: false, compileErrors: [], loadError: null, description: null, warnings: [], datasetProblems: [], policy,
    episodes: 0, endReasons: { terminated: 0, truncated: 0, 'max-turns': 0, error: 0 },
    lengths: { count: 0, mean: 0, std: 0, min: 0, max: 0, histogram: [] }, rewards: {}, errors: [], transcripts: [], logs: [],
    tests: [], typeErrors: [], typeCheckMs: null, durationMs: 0,
  };
}

/** The report of a dry run whose process had to be stopped, or died: not a pass, saying why. */
export function stoppedReport(error: DryRunError, progress: { episodes: number; description: EnvironmentDescription | null }, durationMs: number): DryRunReport {
  return { ...emptyReport(), description: progress.description, episodes: progress.episodes, errors: [error], durationMs };
}
