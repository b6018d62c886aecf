/**
 * One size of bench/scheduler.ts's scale section (plan_round_ms), in a process of its own so that
 * the bench can cut off a size that runs past its time budget: consecutive rounds of the pure
 * planner on a draining synthetic cluster (server/test-support/synthetic-cluster.ts), each round
 * `plan(queueWindow(input))`, as the leader plans it. Prints one JSON line per round
 * ({ round, ms, placed, preempted, waiting, read }), nothing else.
 *
 * Usage: tsx bench/scheduler-scale.ts '{"workers":500,"queued":10000,"priorities":"mixed","rounds":20}'
 */
import { plan } from '../server/scheduler/plan';
import { queueWindow } from '../server/scheduler/queue-window';
import { drainStep, syntheticCluster, type ClusterSize } from '../server/test-support/synthetic-cluster';

const args = JSON.parse(process.argv[2] ?? '{}') as ClusterSize & { rounds?: number };
const cluster = syntheticCluster(args);
let input = cluster.input;
for (let round = 0; round < (args.rounds ?? 20); round++) {
  const t0 = performance.now();
  const window = queueWindow(input);
  const decisions = plan(window);
  const ms = performance.now() - t0;
  process.stdout.write(
    `${JSON.stringify({ round, ms, placed: decisions.placements.length, preempted: decisions.preemptions.length, waiting: decisions.waiting.length, read: window.queued.length, queued: input.queued.length })}\n`,
  );
  input = drainStep(cluster, decisions);
}
