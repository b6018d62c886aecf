/**
 * Runs an environment's reward tests (its tests.ts, sdk/environment/tests.ts) in the sandbox, after
 * the dry run: each case resets an episode on its task, plays its actions in turn order and
 * compares the checked agent's summed reward (and the last step's info) with what it expects. A
 * case whose environment code throws fails with the error at the user's line; nothing here throws
 * for the user's code.
 */
import { z } from 'zod';
import { type Json } from '../../sdk/environment/schema';
import { REWARD_TESTS_FILE, type RewardExpectation } from '../../sdk/environment/tests';
import type { EnvironmentSource } from '../../sdk/environment-source';
import type { EnvironmentDescription, RewardTestResult, SandboxErrorJson, SourceLocation } from '../../sdk/dry-run-report';
import { type LogSink } from './environment-handle';
import { SandboxError } from './sandbox/errors';
import { SandboxEnvironment } from './sandbox/sandbox-environment';

/** Cases run at most; the rest are reported as not run. */
const MAX_CASES = 100;
/** Rewards are sums of floats: equal within this. */
const TOLERANCE = 1e-9;

const finite = z.number().refine(Number.isFinite, 'must be a finite number');
const caseSchema = z.object({
  name: z.string().min(1, 'a name').max(200),
  task: z.unknown().optional(),
  seed: z.number().int().min(0).max(2 ** 32 - 1).optional(),
  completion: z.string().optional(),
  actions: z.array(z.string()).max(1000).optional(),
  agent: z.string().optional(),
  expect: z.strictObject({
    reward: finite.optional(),
    rewardAtLeast: finite.optional(),
    rewardAtMost: finite.optional(),
    info: z.record(z.string(), z.unknown()).optional(),
  }),
});
type Case = z.infer<typeof caseSchema>;

export interface RewardTestOptions {
  source: EnvironmentSource;
  description: EnvironmentDescription;
  /** Cases are not started past this time (a Date.now() value): the dry run's budget. */
  deadline: number;
  onLogs?: LogSink;
}

/** The results of tests.ts's cases, in order; empty when the environment has no tests.ts. */
export async function runRewardTests(o: RewardTestOptions): Promise<RewardTestResult[]> {
  const text = o.source.files[REWARD_TESTS_FILE];
  if (text === undefined) return [];
  const fallback = locate(text, 'defineRewardTests', '') ?? { file: REWARD_TESTS_FILE, line: 1, column: 1 };
  // The whole file failed (does not compile, throws while loading, exports something else): one result says so.
  const whole = (error: SandboxErrorJson): RewardTestResult[] => [
    { name: REWARD_TESTS_FILE, pass: false, expected: {}, actual: null, info: {}, failure: null, error: { ...error, location: error.location ?? fallback }, location: error.location ?? fallback },
  ];
  let env: SandboxEnvironment;
  try {
    const loaded = await SandboxEnvironment.load(o.source, { tests: REWARD_TESTS_FILE, onLogs: o.onLogs });
    if (!loaded.ok) {
      const first = loaded.errors[0];
      return whole({ kind: 'syntax', during: 'compile', message: first?.message ?? 'the tests do not compile', location: first?.location ?? null, userStack: '' });
    }
    env = loaded.env;
  } catch (e) {
    if (!(e instanceof SandboxError)) throw e;
    return whole(e.toJSON());
  }
  try {
    let cases: Json[];
    try {
      cases = await env.tests();
    } catch (e) {
      if (!(e instanceof SandboxError)) throw e;
      return whole({ ...e.toJSON(), location: e.location?.file === REWARD_TESTS_FILE ? e.location : fallback });
    }
    const results: RewardTestResult[] = [];
    for (const [index, value] of cases.slice(0, MAX_CASES).entries()) results.push(await runCase(env, o, text, value, index));
    if (cases.length > MAX_CASES) {
      results.push({ ...notRun(`${cases.length - MAX_CASES} more cases`, fallback), failure: `not run: at most ${MAX_CASES} cases run` });
    }
    return results;
  } finally {
    await env.dispose();
  }
}

async function runCase(env: SandboxEnvironment, o: RewardTestOptions, text: string, value: Json, index: number): Promise<RewardTestResult> {
  const parsed = caseSchema.safeParse(value);
  const given = value && typeof value === 'object' && !Array.isArray(value) && typeof value.name === 'string' ? value.name : '';
  const name = parsed.success ? parsed.data.name : given || `case ${index + 1}`;
  const location = locate(text, name) ?? locate(text, 'defineRewardTests', '') ?? { file: REWARD_TESTS_FILE, line: 1, column: 1 };
  const base = notRun(name, location);
  const invalid = (message: string): RewardTestResult => ({ ...base, error: { kind: 'invalid-output', during: 'tests', message: `reward test "${name}": ${message}`, location, userStack: '' } });
  if (!parsed.success) return invalid(parsed.error.issues.map((i) => `${i.path.join('.') || '(case)'}: ${i.message}`).join('; '));
  const c = parsed.data;
  const problem = caseProblem(c, o.description);
  if (problem) return invalid(problem);
  const result = { ...base, expected: c.expect as RewardExpectation };
  if (Date.now() > o.deadline) return { ...result, failure: 'not run: the dry run used up its time budget' };

  const actions = c.actions ?? [c.completion!];
  const agent = c.agent ?? o.description.agents[0];
  const episodeId = `reward-test-${index}`;
  const seed = c.seed ?? 1;
  const task = c.task === undefined ? {} : o.description.rowSchema ? { row: c.task as Json } : { task: c.task as Json };
  try {
    let reward = 0;
    let info: Record<string, Json> = {};
    let played = 0;
    let open = true;
    await env.reset({ episodeId, seed, taskSeed: seed, ...task });
    for (const action of actions) {
      const step = await env.step({ episodeId, action });
      played++;
      reward += step.rewards[agent] ?? 0;
      info = step.info;
      if (!step.next) {
        open = false;
        break;
      }
    }
    if (open) await env.close(episodeId);
    const failures = unmet(c.expect, reward, info);
    if (played < actions.length) failures.unshift(`the episode ended after ${played} of ${actions.length} actions`);
    return { ...result, pass: failures.length === 0, actual: reward, info, failure: failures.length > 0 ? failures.join('; ') : null };
  } catch (e) {
    if (!(e instanceof SandboxError)) throw e;
    return { ...result, error: e.toJSON() };
  }
}

function notRun(name: string, location: SourceLocation): RewardTestResult {
  return { name, pass: false, expected: {}, actual: null, info: {}, failure: null, error: null, location };
}

function caseProblem(c: Case, description: EnvironmentDescription): string | null {
  if ((c.actions === undefined) === (c.completion === undefined)) return 'give either completion or actions';
  if (c.actions?.length === 0) return 'actions is empty';
  const e = c.expect;
  if (e.reward === undefined && e.rewardAtLeast === undefined && e.rewardAtMost === undefined && e.info === undefined) {
    return 'expect needs reward, rewardAtLeast, rewardAtMost or info';
  }
  if (c.agent !== undefined && !description.agents.includes(c.agent)) return `agent "${c.agent}" is not one of ${description.agents.join(', ')}`;
  if (description.rowSchema && c.task === undefined) return 'this environment reads dataset rows: give the case a task (the row)';
  return null;
}

/** The expectations the outcome misses, in words. */
function unmet(expect: Case['expect'], reward: number, info: Record<string, Json>): string[] {
  const out: string[] = [];
  if (expect.reward !== undefined && Math.abs(reward - expect.reward) > TOLERANCE) out.push(`expected reward ${expect.reward}, got ${reward}`);
  if (expect.rewardAtLeast !== undefined && reward < expect.rewardAtLeast - TOLERANCE) out.push(`expected reward at least ${expect.rewardAtLeast}, got ${reward}`);
  if (expect.rewardAtMost !== undefined && reward > expect.rewardAtMost + TOLERANCE) out.push(`expected reward at most ${expect.rewardAtMost}, got ${reward}`);
  for (const [key, want] of Object.entries(expect.info ?? {})) {
    if (canonical(info[key] ?? null) !== canonical(want ?? null)) out.push(`expected info.${key} = ${canonical(want ?? null)}, got ${canonical(info[key] ?? null)}`);
  }
  return out;
}

/** JSON with object keys sorted: equal texts for deeply equal values. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/** The first place `text` names `name` (quoted, unless `quotes` is empty), as a 1-based location in tests.ts. */
function locate(text: string, name: string, quotes = `'"\``): SourceLocation | null {
  const needles = quotes === '' ? [name] : [...quotes].map((q) => `${q}${name}${q}`);
  for (const needle of needles) {
    const at = text.indexOf(needle);
    if (at < 0) continue;
    const lineStart = text.lastIndexOf('\n', at - 1) + 1;
    return { file: REWARD_TESTS_FILE, line: text.slice(0, at).split('\n').length, column: at - lineStart + 1 };
  }
  return null;
}
