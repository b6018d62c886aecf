import { z } from 'zod';
import { audit } from '../../auth/audit';
import { isOpenSignUp, OPEN_SIGN_UP } from '../../auth/settings';
import { installationAdminProcedure, publicProcedure, router } from '../trpc';

export const installationRouter = router({
  /** What the sign-up page needs to know before anyone signs in. */
  settings: publicProcedure.query(async ({ ctx }) => ({ openSignUp: await isOpenSignUp(ctx.db) })),

  setOpenSignUp: installationAdminProcedure.input(z.object({ open: z.boolean() })).mutation(async ({ ctx, input }) => {
    await ctx.db.setting.upsert({ where: { key: OPEN_SIGN_UP }, update: { value: input.open }, create: { key: OPEN_SIGN_UP, value: input.open } });
    await audit(ctx.db, { actorUserId: ctx.user.id, action: 'installation.sign_up_changed', details: { open: input.open }, ipAddress: ctx.ip });
    return { openSignUp: input.open };
  }),
});
