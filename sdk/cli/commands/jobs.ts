import type { Command } from '../args';
import { EXIT } from '../errors';
import { age, table, truncate } from '../format';
import { call, type CommandContext } from './context';

type JobsCommand = Extract<Command, { name: 'jobs' }>;

export async function jobsCommand(ctx: CommandContext, cmd: JobsCommand): Promise<number> {
  const conn = await ctx.connect();
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
