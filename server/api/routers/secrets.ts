import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { secretNameSchema, secretValueSchema } from '../../../sdk/team-secrets';
import { audit } from '../../auth/audit';
import { deleteTeamSecret, listTeamSecrets, setTeamSecret } from '../../secrets/team-secrets';
import { router, teamProcedure } from '../trpc';

/**
 * The team's secrets (tokens that HTTP environments send as headers). Every member sees the names
 * and who set them when, which a manifest needs; only admins set or delete; no procedure ever
 * returns a value once set, and neither the audit log nor any log line holds one.
 */
export const secretsRouter = router({
  list: teamProcedure('VIEWER').query(({ ctx }) => listTeamSecrets(ctx.db, ctx.membership.teamId)),

  /** Creates the secret or replaces its value. */
  set: teamProcedure('ADMIN')
    .input(z.object({ name: secretNameSchema, value: secretValueSchema }))
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const { id, created } = await setTeamSecret(ctx.db, ctx.deps.secretsKey, { teamId, name: input.name, value: input.value, userId: ctx.user.id });
      await audit(ctx.db, { teamId, actorUserId: ctx.user.id, action: created ? 'secret.created' : 'secret.replaced', targetType: 'secret', targetId: id, details: { name: input.name }, ipAddress: ctx.ip });
      return { name: input.name, created };
    }),

  delete: teamProcedure('ADMIN')
    .input(z.object({ name: secretNameSchema }))
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const id = await deleteTeamSecret(ctx.db, teamId, input.name);
      if (!id) throw new TRPCError({ code: 'NOT_FOUND', message: `No secret ${input.name} in this team` });
      await audit(ctx.db, { teamId, actorUserId: ctx.user.id, action: 'secret.deleted', targetType: 'secret', targetId: id, details: { name: input.name }, ipAddress: ctx.ip });
      return { ok: true };
    }),
});
