import { accountRouter } from './routers/account';
import { environmentsRouter } from './routers/environments';
import { systemRouter } from './routers/system';
import { teamsRouter } from './routers/teams';
import { router } from './trpc';

/** One router per domain, merged here. */
export const appRouter = router({
  system: systemRouter,
  account: accountRouter,
  teams: teamsRouter,
  environments: environmentsRouter,
});

export type AppRouter = typeof appRouter;
