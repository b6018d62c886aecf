import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { audit } from '../../auth/audit';
import type { Db } from '../../db/client';
import { workerJobs } from '../../runs/worker-jobs';
import { notifyScheduler } from '../../scheduler/notify';
import type { WorkerState } from '../../scheduler/types';
import { WORKER_ONLINE_WINDOW_MS } from '../../scheduler/timing';
import { router, teamProcedure } from '../trpc';

const workerId = z.object({ workerId: z.string().min(1).max(64) });

export const workersRouter = router({
  /** The workers that can run this team's jobs: its own pool and the shared one. */
  list: teamProcedure('VIEWER').query(async ({ ctx }) => {
    const workers = await ctx.db.worker.findMany({
      where: { OR: [{ teamId: ctx.membership.teamId }, { teamId: null }], state: { not: 'REVOKED' } },
      orderBy: { registeredAt: 'asc' },
      select: {
        id: true, teamId: true, name: true, hostname: true, state: true, backend: true, version: true, labels: true,
        lastHeartbeatAt: true, registeredAt: true,
        devices: { orderBy: { index: 'asc' }, select: { index: true, kind: true, name: true, memoryBytes: true } },
      },
    });
    const cutoff = Date.now() - WORKER_ONLINE_WINDOW_MS;
    return workers.map((w) => ({ ...w, pool: w.teamId ? 'team' : 'shared', online: w.lastHeartbeatAt.getTime() > cutoff }));
  }),

  /** The jobs running on those workers now, by worker and device (other teams' jobs unnamed). */
  jobs: teamProcedure('VIEWER').query(({ ctx }) => workerJobs(ctx.db, ctx.membership.teamId)),

  /** Stops a worker from taking new work; its running jobs finish or checkpoint. */
  drain: teamProcedure('ADMIN')
    .input(workerId)
    .mutation(({ ctx, input }) => changeWorker(ctx, input.workerId, ['ONLINE', 'OFFLINE'], 'DRAINING', 'worker.drained')),

  /** Undoes a drain: the worker takes new work again (the scheduler is told at once, for the jobs that waited for it). */
  resume: teamProcedure('ADMIN')
    .input(workerId)
    .mutation(async ({ ctx, input }) => {
      const answer = await changeWorker(ctx, input.workerId, ['DRAINING'], 'ONLINE', 'worker.resumed');
      await notifyScheduler(ctx.db, `worker ${input.workerId} resumed`);
      return answer;
    }),

  /** Revokes a worker's credential: it can no longer call the server. */
  revoke: teamProcedure('ADMIN')
    .input(workerId)
    .mutation(({ ctx, input }) => changeWorker(ctx, input.workerId, ['ONLINE', 'DRAINING', 'OFFLINE'], 'REVOKED', 'worker.revoked')),
});

interface ManagingContext {
  db: Db;
  membership: { teamId: string };
  user: { id: string; isInstallationAdmin: boolean };
  caller: { apiKey: unknown };
  ip: string | null;
}

/**
 * Moves a worker from one of `from` to `to`, if the caller manages it: a team admin the team's own
 * workers, and an installation admin, signed in (as installationAdminProcedure asks), the shared
 * pool's too (the local worker of `npm start` is one). Any other worker is NOT_FOUND.
 */
async function changeWorker(ctx: ManagingContext, id: string, from: WorkerState[], to: WorkerState, action: string): Promise<{ ok: true }> {
  const shared = ctx.user.isInstallationAdmin && !ctx.caller.apiKey;
  const worker = await ctx.db.worker.findFirst({ where: { id, OR: [{ teamId: ctx.membership.teamId }, ...(shared ? [{ teamId: null }] : [])] }, select: { teamId: true } });
  const { count } = worker ? await ctx.db.worker.updateMany({ where: { id, state: { in: from } }, data: { state: to } }) : { count: 0 };
  if (count === 0) {
    const which = to === 'ONLINE' ? 'No draining worker of that id' : 'No such worker';
    throw new TRPCError({ code: 'NOT_FOUND', message: `${which} in this team's pool${shared ? ' or the shared one' : ''}` });
  }
  await audit(ctx.db, {
    teamId: worker!.teamId ?? undefined,
    actorUserId: ctx.user.id,
    action,
    targetType: 'worker',
    targetId: id,
    details: { pool: worker!.teamId ? 'team' : 'shared' },
    ipAddress: ctx.ip,
  });
  return { ok: true };
}
