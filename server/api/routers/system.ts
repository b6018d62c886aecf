import { publicProcedure, router } from '../trpc';

export const systemRouter = router({
  health: publicProcedure.query(({ ctx }) => ctx.deps.health()),
});
