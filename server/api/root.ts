import { accountRouter } from './routers/account';
import { apiKeysRouter } from './routers/api-keys';
import { auditRouter } from './routers/audit';
import { datasetsRouter } from './routers/datasets';
import { environmentsRouter } from './routers/environments';
import { galleryRouter } from './routers/gallery';
import { inferenceRouter } from './routers/inference';
import { installationRouter } from './routers/installation';
import { invitationsRouter } from './routers/invitations';
import { jobsRouter } from './routers/jobs';
import { membersRouter } from './routers/members';
import { modelsRouter } from './routers/models';
import { playRouter } from './routers/play';
import { quotasRouter } from './routers/quotas';
import { runsRouter } from './routers/runs';
import { secretsRouter } from './routers/secrets';
import { systemRouter } from './routers/system';
import { teamsRouter } from './routers/teams';
import { tournamentsRouter } from './routers/tournaments';
import { workerTokensRouter } from './routers/worker-tokens';
import { providersRouter } from './routers/providers';
import { workersRouter } from './routers/workers';
import { router } from './trpc';

/** One router per domain, merged here. */
export const appRouter = router({
  system: systemRouter,
  installation: installationRouter,
  account: accountRouter,
  teams: teamsRouter,
  members: membersRouter,
  invitations: invitationsRouter,
  apiKeys: apiKeysRouter,
  workerTokens: workerTokensRouter,
  providers: providersRouter,
  workers: workersRouter,
  quotas: quotasRouter,
  secrets: secretsRouter,
  audit: auditRouter,
  environments: environmentsRouter,
  gallery: galleryRouter,
  datasets: datasetsRouter,
  models: modelsRouter,
  jobs: jobsRouter,
  runs: runsRouter,
  inference: inferenceRouter,
  play: playRouter,
  tournaments: tournamentsRouter,
});

export type AppRouter = typeof appRouter;
