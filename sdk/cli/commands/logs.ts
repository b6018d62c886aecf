import type { Command } from '../args';
import { EXIT } from '../errors';
import { toJson } from '../io';
import { watchJob, type LogItem } from '../watch';
import { call, type CommandContext } from './context';

type LogsCommand = Extract<Command, { name: 'logs' }>;

const PAGE = 5000;

function formatLine(l: LogItem): string {
  const time = new Date(l.time).toISOString().slice(11, 19);
  return `${time} ${l.level.padEnd(5)} ${l.message}`;
}

export async function logsCommand(ctx: CommandContext, cmd: LogsCommand): Promise<number> {
  const conn = await ctx.connect();
  const teamId = conn.teamId;
  if (!cmd.follow) {
    // Checks the job exists even when it has no log yet.
    await call(conn, () => conn.api.jobs.get.query({ teamId, jobId: cmd.jobId }));
    const all = [];
    let afterId: bigint | undefined;
    for (;;) {
      const page = await call(conn, () => conn.api.runs.logs.query({ teamId, jobId: cmd.jobId, afterId, limit: PAGE }));
      all.push(...page);
      for (const l of page) ctx.out.line(formatLine({ ...l, id: l.id.toString() }));
      if (page.length < PAGE) break;
      afterId = page[page.length - 1].id;
    }
    ctx.out.document({ jobId: cmd.jobId, logs: all });
    return EXIT.OK;
  }
  // --follow: everything so far, then live lines until the job ends. With --json, JSON Lines.
  const job = await watchJob({
    conn,
    jobId: cmd.jobId,
    signal: ctx.io.signal,
    onLogs: (items) => {
      for (const l of items) ctx.io.stdout.write(ctx.out.json ? `${toJson(l, 0)}\n` : `${formatLine(l)}\n`);
    },
  });
  if (!ctx.out.json) ctx.io.stderr.write(`job ${job.id} ${job.state}${job.failureReason ? `: ${job.failureReason}` : ''}\n`);
  return EXIT.OK;
}
