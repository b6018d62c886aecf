/**
 * Everything a TRAIN step streams once the coordinator has run it: its metrics (step-metrics.ts),
 * rollout samples, matches and a board of multi-agent games, and log lines about it.
 */
import { type Tokenizer } from '../engine/tokenizer';
import { type StepReport } from '../runtime/coordinator';
import { boardItems, type Emitter, matchItem, rolloutItems } from './emit';
import { stepMetrics } from './step-metrics';
import { stepNumber } from '../../sdk/live';

export async function emitStep(
  emit: Emitter,
  tok: Tokenizer,
  report: StepReport,
  seconds: number,
  limits: { samples: number; matches: number; steps: number; lead?: string },
): Promise<void> {
  const { rollouts } = report;
  // The coordinator's step is the loop's index; what is streamed carries the step's number.
  const step = stepNumber(report.step);
  const values = stepMetrics(report, seconds, limits.lead);
  await emit.metrics(step, values);
  await emit.rollouts(rolloutItems(tok, step, rollouts, limits.samples));
  if (limits.matches > 0) {
    await emit.matches(rollouts.slice(0, limits.matches).map((r) => matchItem(step, r, report.opponents[rollouts.indexOf(r)] ?? {})));
    if (rollouts.length > 0) await emit.boards(boardItems(step, 0, rollouts[0]));
  }
  const unfit = rollouts.filter((r) => r.endReason === 'context' && r.moves.length === 0).length;
  if (unfit > 0) emit.log('warn', `${unfit} of ${rollouts.length} episodes ended before the first move: the prompt does not fit the model's context`);
  const errors = rollouts.filter((r) => r.error).slice(0, 3);
  for (const r of errors) emit.log('warn', `episode ${r.episodeId} failed: ${r.error!.message}`);
  emit.log('info', `step ${step} of ${limits.steps}: reward ${values['reward/mean']?.toFixed(3) ?? '-'} (${rollouts.length} episodes, ${seconds.toFixed(2)} s)`);
}
