/**
 * `npm run bench:templates -- <template>… [--set key=value]… [--eval N]`: each template's default
 * training (its manifest's `training`, warm start included) through the job runner — the code a
 * worker runs for a TRAIN job, with an in-memory sink in place of the server — then the figures a
 * user would read on the run page. One JSON object per figure.
 *
 * The template's held-out split (data-dependent templates) is the job's evaluation set, all of it
 * (`--eval N` for N episodes instead; default: the held-out rows, else the manifest's). `--set`
 * changes an option as the CLI's does (e.g. `--set warmStart.steps=300 --set seed=1`): for
 * measuring other settings without editing the manifest.
 *
 * Figures per template: `<t>_heldout_exact` (data-dependent: the final evaluation's success rate,
 * greedy) or `<t>_final_eval`; `<t>_after_warm_start` (the evaluation after the warm start);
 * `<t>_final_reward` (mean training reward of the last 5 steps); with the seconds of the warm
 * start and of the whole run (training and evaluations both: the wall time a user waits).
 */
import { loadavg } from 'node:os';
import { loadTemplate, TEMPLATE_NAMES, type TemplateName } from '../env-templates/load-template';
import { initBackend } from '../gpu-worker/engine/backend';
import { runJob } from '../gpu-worker/job-runner/run-job';
import { JobControl, MemorySink } from '../gpu-worker/job-runner/sink';
import { templateEnvironment, testAssignment } from '../gpu-worker/test-support/job-runner/assignments';
import { type MetricItem } from '../sdk/live';
import { applySet, type TrainingOverrides } from '../sdk/training-config';
import { emit } from './engine-measure';

const args = process.argv.slice(2);
const names: TemplateName[] = [];
let overrides: TrainingOverrides = {};
let evalEpisodes: number | undefined;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--set') overrides = applySet(overrides, args[++i]);
  else if (args[i] === '--eval') evalEpisodes = Number(args[++i]);
  else if ((TEMPLATE_NAMES as readonly string[]).includes(args[i])) names.push(args[i] as TemplateName);
  else throw new Error(`unknown argument ${args[i]}: name templates (${TEMPLATE_NAMES.join(', ')}), --set key=value, --eval N`);
}
if (names.length === 0) names.push('math');

await initBackend();
for (const name of names) await measure(name);

async function measure(name: TemplateName): Promise<void> {
  const template = loadTemplate(name);
  const sink = new MemorySink();
  const blobKeys: Record<string, string> = {};
  const config: Record<string, unknown> = { environmentVersionId: `${name}-v1` };
  const split = template.manifest.dataset;
  const heldOut = split?.heldOut ? template.datasetFiles[split.heldOut] : undefined;
  if (split) {
    sink.blobs.set('train', new TextEncoder().encode(template.datasetFiles[split.train]));
    blobKeys.train = 'train';
    config.datasetVersionId = 'train';
  }
  if (heldOut) {
    sink.blobs.set('held-out', new TextEncoder().encode(heldOut));
    blobKeys['held-out'] = 'held-out';
    config.evalDatasetVersionId = 'held-out';
  }
  const episodes = evalEpisodes ?? (heldOut ? heldOut.split('\n').filter((l) => l.trim() !== '').length : undefined);
  config.training = { ...overrides, ...(episodes !== undefined ? { evalEpisodes: episodes } : {}) };

  const started = performance.now();
  let warmStartSeconds: number | null = null;
  sink.onBatch = (kind, items) => {
    // The RL phase's first metrics: the warm start (and its evaluation) is over.
    if (warmStartSeconds === null && kind === 'metrics' && (items as MetricItem[]).some((m) => m.key === 'reward/mean')) warmStartSeconds = (performance.now() - started) / 1000;
  };
  const result = await runJob(testAssignment({ config, environment: templateEnvironment(name), blobKeys }), sink, new JobControl());
  const seconds = (performance.now() - started) / 1000;
  if (result.outcome !== 'succeeded') throw new Error(`${name}: ${result.outcome}: ${result.reason}`);

  const metrics = sink.items('metrics');
  const series = (key: string) => metrics.filter((m) => m.key === key);
  const last = (key: string) => series(key).at(-1)?.value ?? null;
  const rewards = series('reward/mean').map((m) => m.value);
  const tail = rewards.slice(-5);
  const settings = { training: config.training, load: loadAverage() };
  const timing = { seconds: round(seconds), warm_start_seconds: warmStartSeconds === null ? null : round(warmStartSeconds) };
  const final = heldOut ? last('eval/success_rate') : last('eval/score');
  const prefix = name.replace(/-/g, '_');
  if (final !== null) emit(`${prefix}_${heldOut ? 'heldout_exact' : 'final_eval'}`, final, 'rate', { episodes: last('eval/games'), ...timing, ...settings });
  const afterWarmStart = last('warmstart/eval_score');
  const warmStartLog = sink.items('logs').find((l) => l.message.startsWith('warm start: SFT on'))?.message;
  if (afterWarmStart !== null) emit(`${prefix}_after_warm_start`, afterWarmStart, 'rate', { steps: series('warmstart/loss').length, final_loss: last('warmstart/loss'), log: warmStartLog, ...timing });
  if (tail.length > 0) emit(`${prefix}_final_reward`, tail.reduce((a, b) => a + b, 0) / tail.length, 'mean reward', { steps: rewards.length, curve: every(rewards, 10), evals: series('eval/score').map((m) => [m.step, round(m.value)]), ...timing });
  for (const line of sink.items('logs').filter((l) => l.level === 'warn')) emit(`${prefix}_warning`, 1, 'line', { message: line.message });
}

function every(values: number[], n: number): number[] {
  return values.filter((_, i) => i % n === n - 1 || i === values.length - 1).map(round);
}

function round(x: number): number {
  return Number(x.toFixed(3));
}

function loadAverage(): number {
  return round(loadavg()[0]);
}
