import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { audit } from '../../auth/audit';
import { workerJobs } from '../../runs/worker-jobs';
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

  /** Stops a team worker from taking new work; its running jobs finish or checkpoint. */
  drain: teamProcedure('ADMIN')
    .input(workerId)
    .mutation(async ({ ctx, input }) => {
      const { count } = await ctx.db.worker.updateMany({
        where: { id: input.workerId, teamId: ctx.membership.teamId, state: { in: ['ONLINE', 'OFFLINE'] } },
        data: { state: 'DRAINING' },
      });
      if (count === 0) throw new TRPCError({ code: 'NOT_FOUND', message: "No such worker in this team's pool" });
      await audit(ctx.db, { teamId: ctx.membership.teamId, actorUserId: ctx.user.id, action: 'worker.drained', targetType: 'worker', targetId: input.workerId, ipAddress: ctx.ip });
      return { ok: true };
    }),

  /** Revokes a team worker's credential: it can no longer call the server. */
  revoke: teamProcedure('ADMIN')
    .input(workerId)
    .mutation(async ({ ctx, input }) => {
      const { count } = await ctx.db.worker.updateMany({
        where: { id: input.workerId, teamId: ctx.membership.teamId, state: { not: 'REVOKED' } },
        data: { state: 'REVOKED' },
      });
      if (count === 0) throw new TRPCError({ code: 'NOT_FOUND', message: "No such worker in this team's pool" });
      await audit(ctx.db, { teamId: ctx.membership.teamId, actorUserId: ctx.user.id, action: 'worker.revoked', targetType: 'worker', targetId: input.workerId, ipAddress: ctx.ip });
      return { ok: true };
    }),
});
