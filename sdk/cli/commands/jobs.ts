import type { Command } from '../args';
import { EXIT } from '../errors';
import { age, table, truncate } from '../format';
import { describeOptions } from '../../training-config';
import type { Connection } from '../client';
import { call, type CommandContext } from './context';

type JobsCommand = Extract<Command, { name: 'jobs' }>;

export async function jobsCommand(ctx: CommandContext, cmd: JobsCommand): Promise<number> {
  const conn = await ctx.connect();
  if (cmd.jobId) return showJob(ctx, conn, cmd.jobId, cmd.config);
  const jobs = await call(conn, () => conn.api.jobs.list.query({ teamId: conn.teamId, limit: cmd.limit, ...(cmd.state ? { state: cmd.state } : {}) }));
  ctx.out.document({ jobs });
  if (jobs.length === 0) {
    ctx.out.line(cmd.state ? `no ${cmd.state.toLowerCase()} jobs` : 'no jobs yet: whetstone run <env folder> --algo grpo');
    return EXIT.OK;
  }
  const now = new Date();
  const reason = (j: (typeof jobs)[number]) => (j.state === 'FAILED' ? (j.failureReason ?? '') : ['QUEUED', 'PREEMPTED'].includes(j.state) ? (j.waitingReason ?? '') : '');
  // The newest sampler checkpoint (for `whetstone eval` and the playground), and how many in all.
  const checkpoint = (j: (typeof jobs)[number]) => {
    const count = j._count.checkpoints;
    if (count === 0) return '';
    const [sampler] = j.checkpoints;
    return sampler ? `${sampler.id} @${sampler.step}${count > 1 ? ` (+${count - 1})` : ''}` : `${count} training`;
  };
  ctx.out.line(
    table(
      ['ID', 'KIND', 'STATE', 'PRIORITY', 'OWNER', 'AGE', 'CHECKPOINT', 'WAITING / REASON'],
      jobs.map((j) => [j.id, j.kind, j.state, String(j.priority), truncate(j.owner.name, 20), age(j.createdAt, now), checkpoint(j), truncate(reason(j), 70)]),
    ),
  );
  return EXIT.OK;
}

/** One job: its state, and its resolved training config option by option (what it trains with). */
async function showJob(ctx: CommandContext, conn: Connection, jobId: string, configOnly: boolean): Promise<number> {
  const job = await call(conn, () => conn.api.jobs.get.query({ teamId: conn.teamId, jobId }));
  const config = (job.config ?? {}) as Record<string, unknown>;
  ctx.out.document(configOnly ? { id: job.id, kind: job.kind, config } : { job });
  if (!configOnly) {
    ctx.out.line(`job ${job.id}: ${job.kind} ${job.state}, priority ${job.priority}, owner ${job.owner.name}, attempts ${job.attempts}`);
    const reason = job.state === 'FAILED' ? job.failureReason : job.waitingReason;
    if (reason) ctx.out.line(`  ${reason}`);
  }
  const training = config.training as Record<string, unknown> | undefined;
  const algorithm = training?.algorithm;
  if (!training || (algorithm !== 'grpo' && algorithm !== 'ppo' && algorithm !== 'sft')) {
    ctx.out.line(JSON.stringify(config, null, 2));
    return EXIT.OK;
  }
  for (const [key, value] of Object.entries(config)) if (key !== 'training') ctx.out.line(`${key}: ${JSON.stringify(value)}`);
  ctx.out.line(`training (${algorithm}; * differs from the documented default):`);
  const rows: string[][] = [];
  let group = '';
  for (const option of describeOptions(algorithm)) {
    const value = option.name.startsWith('model.') ? (training.model as Record<string, unknown> | undefined)?.[option.name.slice(6)] : training[option.name];
    if (value === undefined && option.default === undefined) continue;
    rows.push([option.group === group ? '' : option.group, option.name, JSON.stringify(value), JSON.stringify(value) === JSON.stringify(option.default) ? '' : '*']);
    group = option.group;
  }
  ctx.out.line(table(['GROUP', 'OPTION', 'VALUE', ''], rows));
  return EXIT.OK;
}
