/**
 * One size of bench/scheduler.ts's scale section (plan_round_ms), in a process of its own so that
 * the bench can cut off a size that runs past its time budget: consecutive rounds of the pure
 * planner on a draining synthetic cluster (server/test-support/synthetic-cluster.ts). A round is
 * what the leader computes from the queue it read: `planner: "incremental"` is the leader's way,
 * one Planner (server/scheduler/planner.ts) kept across the rounds (group_ms is then inside ms and
 * printed as 0); `"fast"` groups it by kind and plans
 * the jobs that decide the round (server/scheduler/plan-round.ts's planRound, its two steps); `"reference"` is the planner
 * before issue 20 (test-support/plan-reference.ts) on the queue window it planned
 * (queue-window.ts). Prints one JSON line per round ({ round, ms, group_ms, placed, preempted,
 * read, queued }), nothing else.
 *
 * Usage: tsx bench/scheduler-scale.ts '{"workers":500,"queued":10000,"priorities":"mixed","rounds":20,"planner":"fast"}'
 */
import { byKind } from '../server/scheduler/plan-round';
import { planKinds } from '../server/scheduler/plan';
import { Planner } from '../server/scheduler/planner';
import { queueWindow } from '../server/scheduler/queue-window';
import type { Plan, PlanInput } from '../server/scheduler/types';
import { referencePlan } from '../server/test-support/plan-reference';
import { drainStep, syntheticCluster, type ClusterSize } from '../server/test-support/synthetic-cluster';

const args = JSON.parse(process.argv[2] ?? '{}') as ClusterSize & { rounds?: number; planner?: 'incremental' | 'fast' | 'reference' };
const cluster = syntheticCluster(args);
const planner = new Planner();

function round(input: PlanInput): { decisions: Plan; read: number; groupMs: number } {
  if (args.planner === 'incremental') {
    const { plan, read } = planner.round(input);
    return { decisions: plan, read: read.length, groupMs: 0 };
  }
  if (args.planner === 'reference') {
    const window = queueWindow(input);
    return { decisions: referencePlan(window), read: window.queued.length, groupMs: 0 };
  }
  // planRound's two steps, the grouping timed on its own (it was once run twice, counted twice).
  const t0 = performance.now();
  const { queued, ...rest } = input;
  const kinds = byKind({ queued, now: input.now });
  const groupMs = performance.now() - t0;
  const { plan, read } = planKinds(rest, kinds);
  return { decisions: plan, read: read.length, groupMs };
}

let input = cluster.input;
for (let n = 0; n < (args.rounds ?? 20); n++) {
  const t0 = performance.now();
  const { decisions, read, groupMs } = round(input);
  const ms = performance.now() - t0;
  process.stdout.write(
    `${JSON.stringify({ round: n, ms, group_ms: groupMs, placed: decisions.placements.length, preempted: decisions.preemptions.length, read, queued: input.queued.length })}\n`,
  );
  input = drainStep(cluster, decisions);
}
