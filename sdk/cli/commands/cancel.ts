import type { Command } from '../args';
import { EXIT } from '../errors';
import { call, type CommandContext } from './context';

type CancelCommand = Extract<Command, { name: 'cancel' }>;

export async function cancelCommand(ctx: CommandContext, cmd: CancelCommand): Promise<number> {
  const conn = await ctx.connect();
  const result = await call(conn, () => conn.api.jobs.cancel.mutate({ teamId: conn.teamId, jobId: cmd.jobId }));
  const cancelRequested = 'cancelRequested' in result && result.cancelRequested === true;
  ctx.out.document({ jobId: cmd.jobId, state: result.state, cancelRequested });
  if (cancelRequested) ctx.out.line(`cancel requested: job ${cmd.jobId} is ${result.state.toLowerCase()}; its worker stops it`);
  else if (result.state === 'CANCELLED') ctx.out.line(`cancelled job ${cmd.jobId}`);
  else ctx.out.line(`job ${cmd.jobId} had already ended: ${result.state}`);
  return EXIT.OK;
}
