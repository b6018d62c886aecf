/**
 * The dry run the server calls when a user saves an environment: compile, load in the sandbox,
 * play a few episodes with the environment's bots or a random-text policy, and report what
 * happened — episode lengths, reward distributions, errors located in the user's TypeScript, and a
 * few transcripts — within a time budget of a few seconds.
 */
import { Rng } from '../../sdk/environment/rng';
import { type Json } from '../../sdk/environment/schema';
import { parseJsonlDataset } from '../../sdk/dataset';
import { type Manifest } from '../../sdk/manifest';
import type { EnvironmentSource } from '../../sdk/environment-source';
import { SandboxError } from './sandbox/errors';
import { type EnvironmentHandle, type LogSink } from './environment-handle';
import { openEnvironment } from './open-environment';
import { SandboxEnvironment } from './sandbox/sandbox-environment';
import { type Actor, playEpisode } from './play-episode';
import { runRewardTests } from './reward-tests';
import { CharTokenizer } from '../engine/tokenizer';
import { type Distribution, type DryRunError, type DryRunReport, emptyReport, type EnvironmentDescription, tooLongError, type Transcript } from '../../sdk/dry-run-report';

export interface DryRunOptions {
  source: EnvironmentSource;
  /** Limits and agents to check against; without one, 8 turns per agent. */
  manifest?: Pick<Manifest, 'kind' | 'agents' | 'limits' | 'server'>;
  /** The team's values of the secrets an HTTP environment's headers name. */
  secrets?: Record<string, string>;
  /** Dataset rows, required for data-dependent environments (a sample of the train split is enough). */
  rows?: Json[];
  /** Or the dataset file as saved: checked line by line against the code's rowSchema. */
  dataset?: { path: string; text: string };
  episodes?: number;
  /**
   * Who plays: "bots" uses the environment's bots (`botPerAgent`, or its bots in turn), "random"
   * writes random text, which checks that the environment survives garbage.
   */
  policy?: 'bots' | 'random';
  botPerAgent?: Record<string, string>;
  seed?: number;
  /**
   * The dry run's budget: an episode is not started past it, and a run that has not played all its
   * episodes by then did not pass ("took too long"): an environment that slow stalls training too.
   */
  timeBudgetMs?: number;
  transcripts?: number;
  /** After each episode, for a report when the run is stopped from outside. */
  onProgress?: (episodes: number, description: EnvironmentDescription) => void;
}

const MAX_LOG_LINES = 100;
const DEFAULT_BUDGET_MS = 3000;

export async function dryRun(options: DryRunOptions): Promise<DryRunReport> {
  const started = Date.now();
  const logs: string[] = [];
  const report: DryRunReport = { ...emptyReport(options.policy), logs };
  const finish = () => ({ ...report, durationMs: Date.now() - started });

  let env: EnvironmentHandle;
  // Served over HTTP: the dry run plays the live servers (random text: they have no bots).
  const served = options.manifest?.server ? options.manifest : null;
  try {
    const onLogs: LogSink = (lines, episodeId) => {
      for (const line of lines) if (logs.length < MAX_LOG_LINES) logs.push(episodeId ? `[${episodeId}] ${line}` : line);
    };
    const loaded = served
      ? await openEnvironment(served, options.source, { jobId: 'dry-run', secrets: options.secrets, warn: (message) => onLogs([message], null) })
      : await SandboxEnvironment.load(options.source, { onLogs });
    if (!loaded.ok) {
      report.compileErrors = loaded.errors;
      return finish();
    }
    env = loaded.env;
  } catch (e) {
    if (!(e instanceof SandboxError)) throw e;
    report.loadError = e.toJSON();
    return finish();
  }

  try {
    await playEpisodes(env, report, options, started);
  } finally {
    await env.dispose();
  }
  // An HTTP environment has no code here, so no reward tests.
  if (served) return finish();
  // The reward tests run in a sandbox of their own (their bundle includes tests.ts), in what is left of the budget.
  report.tests = await runRewardTests({
    source: options.source,
    description: env.description,
    deadline: started + (options.timeBudgetMs ?? DEFAULT_BUDGET_MS),
    onLogs: (lines) => {
      for (const line of lines) if (logs.length < MAX_LOG_LINES) logs.push(`[tests] ${line}`);
    },
  });
  return finish();
}

/** The dry run's episodes, summarised into the report. */
async function playEpisodes(env: EnvironmentHandle, report: DryRunReport, options: DryRunOptions, started: number): Promise<void> {
  const description = env.description;
  report.description = description;
  report.warnings = checkAgainstManifest(description, options.manifest);
  let rows = options.rows;
  // The rows of a dataset the manifest names, checked against the code's rowSchema where it
  // declares one; an HTTP game declares none (its server reads the rows), and gets them as objects.
  if (options.dataset) {
    const parsed = parseJsonlDataset(options.dataset.text, description.rowSchema ?? { type: 'object', properties: {} });
    report.datasetProblems = parsed.problems.map((p) => ({ ...p, path: options.dataset!.path }));
    rows = parsed.rows;
  }
  if (description.rowSchema && (!rows || rows.length === 0)) {
    report.warnings.push('this environment reads dataset rows (rowSchema) but the dry run was given none');
    return;
  }
  const policy = report.policy === 'bots' && description.bots.length === 0 ? 'random' : report.policy;
  report.policy = policy;
  const episodes = options.episodes ?? 16;
  const budget = options.timeBudgetMs ?? DEFAULT_BUDGET_MS;
  const maxTurns = options.manifest?.limits.maxTurns ?? 8;
  const seed = options.seed ?? 1;
  const rng = new Rng(seed);
  const bots = botPerAgent(description, options.botPerAgent);
  const transcripts: Transcript[] = [];
  for (let i = 0; i < episodes && Date.now() - started < budget; i++) {
    const episodeId = `dry-${i}`;
    const actor = policy === 'bots' ? (agent: string, _observation: string, id: string) => env.bot({ episodeId: id, bot: bots[agent] }) : randomTextActor(rng.fork(), description);
    const row = rows ? rows[i % rows.length] : undefined;
    transcripts.push(await playEpisode(env, { episodeId, seed: seed * 1000 + i, taskSeed: seed * 1000 + i, row, actor, maxTurns }));
    options.onProgress?.(transcripts.length, description);
  }
  summarise(report, transcripts, options.transcripts ?? 3);
  if (policy === 'bots' && options.manifest) report.warnings.push(...botActionsTooLong(transcripts, bots, options.manifest.limits.maxTokensPerTurn));
  if (transcripts.length < episodes) report.errors.push(tooLongError(transcripts.length, episodes, budget));
  // Zero completed episodes is never a pass, nor is a run that could not finish its episodes in time.
  report.ok = report.errors.length === 0 && report.datasetProblems.length === 0 && transcripts.length === episodes;
}

/** The bot that plays each agent: the one chosen, else the environment's bots in turn. */
function botPerAgent(description: EnvironmentDescription, chosen: Record<string, string> = {}): Record<string, string> {
  const byAgent: Record<string, string> = {};
  description.agents.forEach((agent, i) => {
    byAgent[agent] = chosen[agent] ?? description.bots[i % description.bots.length];
  });
  return byAgent;
}

/**
 * Bots that wrote an action longer, in tokens of the character tokenizer every new policy has, than
 * a policy may write in a turn: a policy imitating them (a warm start) or finding the same action is
 * cut off before it ends it, so a tool call never closes and never runs (math-tools' call was 42
 * tokens against 32).
 */
function botActionsTooLong(transcripts: Transcript[], byAgent: Record<string, string>, maxTokensPerTurn: number): string[] {
  const tok = new CharTokenizer();
  const longest = new Map<string, { tokens: number; agent: string }>();
  for (const turn of transcripts.flatMap((t) => t.turns)) {
    const bot = byAgent[turn.agent];
    const tokens = tok.encode(turn.action).length;
    if (tokens > maxTokensPerTurn && tokens > (longest.get(bot)?.tokens ?? 0)) longest.set(bot, { tokens, agent: turn.agent });
  }
  return [...longest].map(
    ([bot, { tokens, agent }]) =>
      `bot "${bot}" (playing ${agent}) wrote an action of ${tokens} tokens, more than limits.maxTokensPerTurn (${maxTokensPerTurn}): ` +
      `a policy that imitates it is cut off before the end; raise maxTokensPerTurn to at least ${tokens}`,
  );
}

/** Random short texts, sometimes shaped like the syntaxes environments parse (tool calls, moves, numbers). */
export function randomTextActor(rng: Rng, description: EnvironmentDescription): Actor {
  const words = ['yes', 'no', 'A', 'B', '42', '-7', '3.5', '', ' ', '<move>1,1</move>', '<answer>12</answer>', '{"a":1}', '∑ ü 漢'];
  return () => {
    const roll = rng.next();
    if (roll < 0.15 && description.tools.length > 0) return `<tool_call>${rng.pick(description.tools).name}(${rng.int(0, 1000)})</tool_call>`;
    if (roll < 0.3) return String(rng.int(-100, 1000));
    const n = rng.int(1, 4);
    return Array.from({ length: n }, () => rng.pick(words)).join(' ');
  };
}

function checkAgainstManifest(description: EnvironmentDescription, manifest: DryRunOptions['manifest']): string[] {
  if (!manifest) return [];
  const warnings: string[] = [];
  if (manifest.agents.join(',') !== description.agents.join(',')) {
    warnings.push(`manifest agents [${manifest.agents.join(', ')}] differ from the code's [${description.agents.join(', ')}]`);
  }
  const codeKind = description.kind;
  const compatible = manifest.kind === codeKind || (manifest.kind === 'single-turn' && codeKind === 'multi-turn');
  if (!compatible) warnings.push(`manifest kind "${manifest.kind}" but the code defines a ${codeKind} environment`);
  return warnings;
}

function summarise(report: DryRunReport, transcripts: Transcript[], keep: number): void {
  report.episodes = transcripts.length;
  const errors = new Map<string, DryRunError>();
  for (const t of transcripts) {
    report.endReasons[t.endReason]++;
    if (t.error) {
      const key = `${t.error.kind}|${t.error.message}`;
      const seen = errors.get(key);
      if (seen) seen.episodes++;
      else errors.set(key, { ...t.error, episodes: 1 });
    }
  }
  report.errors = [...errors.values()];
  report.lengths = distribution(transcripts.map((t) => t.turns.length));
  const agents = report.description?.agents ?? [];
  report.rewards = Object.fromEntries(
    agents.map((agent) => [agent, distribution(transcripts.filter((t) => !t.error).map((t) => t.totalRewards[agent] ?? 0))]),
  );
  // Keep failing transcripts first: they are the ones a user needs to read.
  report.transcripts = [...transcripts.filter((t) => t.error), ...transcripts.filter((t) => !t.error)].slice(0, keep);
}

function distribution(values: number[]): Distribution {
  if (values.length === 0) return { count: 0, mean: 0, std: 0, min: 0, max: 0, histogram: [] };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const std = Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length);
  const counts = new Map<number, number>();
  for (const v of values) {
    const key = Math.round(v * 1000) / 1000;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const histogram = [...counts.entries()]
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || a.value - b.value)
    .slice(0, 12);
  return { count: values.length, mean, std, min: Math.min(...values), max: Math.max(...values), histogram };
}
