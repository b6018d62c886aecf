import { createProvider, createProviderInput, deleteProvider, listProviders, providerIdInput, updateProvider, updateProviderInput } from '../../providers/service';
import { installationAdminProcedure, router, teamProcedure } from '../trpc';

/** Cluster providers that start workers for a team's own pool (admins), and for the shared pool (installation admins). */
export const providersRouter = router({
  list: teamProcedure('ADMIN').query(({ ctx }) => listProviders(ctx.db, ctx.membership.teamId)),
  create: teamProcedure('ADMIN')
    .input(createProviderInput)
    .mutation(({ ctx, input }) => createProvider(ctx.db, ctx.membership.teamId, input, { userId: ctx.user.id, ip: ctx.ip })),
  update: teamProcedure('ADMIN')
    .input(updateProviderInput)
    .mutation(({ ctx, input }) => updateProvider(ctx.db, ctx.membership.teamId, input, { userId: ctx.user.id, ip: ctx.ip })),
  delete: teamProcedure('ADMIN')
    .input(providerIdInput)
    .mutation(({ ctx, input }) => deleteProvider(ctx.db, ctx.membership.teamId, input.providerId, { userId: ctx.user.id, ip: ctx.ip })),

  listShared: installationAdminProcedure.query(({ ctx }) => listProviders(ctx.db, null)),
  createShared: installationAdminProcedure
    .input(createProviderInput)
    .mutation(({ ctx, input }) => createProvider(ctx.db, null, input, { userId: ctx.user.id, ip: ctx.ip })),
  updateShared: installationAdminProcedure
    .input(updateProviderInput)
    .mutation(({ ctx, input }) => updateProvider(ctx.db, null, input, { userId: ctx.user.id, ip: ctx.ip })),
  deleteShared: installationAdminProcedure
    .input(providerIdInput)
    .mutation(({ ctx, input }) => deleteProvider(ctx.db, null, input.providerId, { userId: ctx.user.id, ip: ctx.ip })),
});
