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
  ctx.out.line(
    table(
      ['ID', 'KIND', 'STATE', 'PRIORITY', 'OWNER', 'AGE', 'WAITING / REASON'],
      jobs.map((j) => [j.id, j.kind, j.state, String(j.priority), truncate(j.owner.name, 20), age(j.createdAt, now), truncate(reason(j), 70)]),
    ),
  );
  return EXIT.OK;
}
