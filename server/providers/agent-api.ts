// The provider agent's HTTP side (sdk/provider-protocol.ts): one poll, in which the agent reports
// what became of its launches and gets its orders. Everything a poll changes is changed in one
// transaction holding the provider's row, so two agents of one provider cannot both launch.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type LaunchOrder, PROVIDER_POLL_ROUTE, PROVIDER_TOKEN_PREFIX, type PollResponse, pollRequestSchema, type SlurmSettings, slurmSettingsSchema } from '../../sdk/provider-protocol';
import { hashSecret, newSecret } from '../auth/tokens';
import { type Db, rawQuery } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import { DISPLAY_PREFIX_LENGTH, WORKER_TOKEN_PREFIX } from '../workers/credentials';
import { readJson, send } from '../workers/api';
import { Refusal } from '../workers/refusal';
import { backoffSeconds, launchesWanted } from './launches';

const MAX_JSON_BYTES = 1_000_000;
/** How often agents poll (a launch order waits at most this long); WHETSTONE_PROVIDER_POLL_SECONDS for tests. */
const pollSeconds = () => Number(process.env.WHETSTONE_PROVIDER_POLL_SECONDS ?? 5);
const FINAL = ['ENDED', 'FAILED', 'CANCELLED'] as const;

/** The provider a request's `Authorization: Bearer wsp_…` belongs to; 401 otherwise. */
async function authenticate(db: Db, authorization: string | undefined) {
  const credential = new RegExp(`^Bearer\\s+(${PROVIDER_TOKEN_PREFIX}\\S+)$`).exec(authorization ?? '')?.[1];
  if (!credential || credential.length > 200) throw new Refusal(401, 'Missing provider credential');
  const provider = await db.clusterProvider.findUnique({ where: { tokenHash: hashSecret(credential) } });
  if (!provider) throw new Refusal(401, 'The provider credential is not valid (wrong, or the provider was deleted)');
  return provider;
}

/**
 * Devices asked for by queued jobs that the provider's workers could hold and that wait for
 * capacity: every queued job of a kind (team, owner, priority, request, time limit) whose planned
 * jobs wait with NO_CAPACITY or NO_WORKER (the rest of a kind wait behind those), of the
 * provider's team (a team's provider) or of any team (the shared pool's).
 */
async function demandDevices(db: Db, teamId: string | null, settings: SlurmSettings): Promise<number> {
  const [row] = await rawQuery<{ devices: number }>(db, Prisma.sql`
    WITH waiting AS (
      SELECT DISTINCT "teamId", "ownerId", priority, "deviceCount", "deviceKind", "memoryBytes", "timeLimitSeconds"
        FROM "Job" WHERE state = 'QUEUED' AND "waitingCode" IN ('NO_CAPACITY', 'NO_WORKER'))
    SELECT coalesce(sum(j."deviceCount"), 0)::float8 AS devices
      FROM "Job" j JOIN waiting w
        ON w."teamId" = j."teamId" AND w."ownerId" = j."ownerId" AND w.priority = j.priority AND w."deviceCount" = j."deviceCount"
       AND w."deviceKind" IS NOT DISTINCT FROM j."deviceKind" AND w."memoryBytes" = j."memoryBytes" AND w."timeLimitSeconds" IS NOT DISTINCT FROM j."timeLimitSeconds"
     WHERE j.state = 'QUEUED' AND j."deviceCount" <= ${settings.devicesPerWorker}
       AND (j."deviceKind" IS NULL OR j."deviceKind"::text = ${settings.deviceKind})
       AND (${teamId}::text IS NULL OR j."teamId" = ${teamId})`);
  return row?.devices ?? 0;
}

/**
 * Devices that other providers' launches will bring to the same demand: launches not yet over
 * whose worker has not registered, of providers of the same pool (and, for a team's provider, of
 * the shared pool's) with the same device kind. Two providers that serve one pool (a100 and h100
 * partitions, say) would otherwise both launch for the same waiting job.
 */
async function othersComingDevices(db: Db, providerId: string, teamId: string | null, settings: SlurmSettings): Promise<number> {
  const [row] = await rawQuery<{ devices: number }>(db, Prisma.sql`
    SELECT coalesce(sum(least((p.settings->>'devicesPerWorker')::int, ${settings.devicesPerWorker})), 0)::float8 AS devices
      FROM "ClusterLaunch" l JOIN "ClusterProvider" p ON p.id = l."providerId"
     WHERE p.id <> ${providerId} AND (p."teamId" IS NULL OR p."teamId" = ${teamId})
       AND coalesce(p.settings->>'deviceKind', 'CUDA') = ${settings.deviceKind}
       AND l.state NOT IN ('ENDED', 'FAILED', 'CANCELLED')
       AND NOT EXISTS (SELECT 1 FROM "Worker" w WHERE w."tokenId" = l."workerTokenId")`);
  return row?.devices ?? 0;
}

async function poll(db: Db, req: IncomingMessage): Promise<PollResponse> {
  const provider = await authenticate(db, req.headers.authorization);
  const parsed = pollRequestSchema.safeParse(await readJson(req, MAX_JSON_BYTES));
  if (!parsed.success) throw new Refusal(400, 'Invalid request', parsed.error.issues);
  const input = parsed.data;
  const settingsParsed = slurmSettingsSchema.safeParse(provider.settings);
  const now = new Date();
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM "ClusterProvider" WHERE id = ${provider.id} FOR UPDATE`;
    let { failures, lastError } = provider;
    let backoffUntil = provider.backoffUntil;
    const failed = (reason: string) => {
      failures += 1;
      lastError = reason;
      backoffUntil = new Date(now.getTime() + backoffSeconds(failures) * 1000);
    };

    // What became of the launches: the cluster's state, its job id and its reason.
    for (const sent of input.reports) {
      // The cluster's words on one line: reasons are shown in lists and titles.
      const report = { ...sent, reason: sent.reason?.replace(/\s*\n\s*/g, '; ').trim() };
      const launch = await tx.clusterLaunch.findFirst({ where: { id: report.launchId, providerId: provider.id } });
      if (!launch || (FINAL as readonly string[]).includes(launch.state)) continue;
      const final = (FINAL as readonly string[]).includes(report.state);
      if (launch.state === 'SUBMITTING') {
        if (report.state === 'FAILED' && !report.externalId) failed(`the cluster refused the launch: ${report.reason ?? 'no reason given'}`);
        else if (report.externalId) {
          failures = 0;
          lastError = null;
          backoffUntil = null;
        }
      }
      await tx.clusterLaunch.update({
        where: { id: launch.id },
        data: {
          state: report.state,
          externalId: report.externalId ?? launch.externalId,
          reason: report.reason ?? null,
          runningAt: report.state === 'RUNNING' ? (launch.runningAt ?? now) : launch.runningAt,
          endedAt: final ? now : null,
        },
      });
    }

    const cancels: PollResponse['orders'] = [];
    if (settingsParsed.success) {
      const settings = settingsParsed.data;
      // A launch the agent never said it submitted, or whose worker never registered once running: given up.
      const overdue = new Date(now.getTime() - settings.registerTimeoutSeconds * 1000);
      const lost = await tx.clusterLaunch.findMany({ where: { providerId: provider.id, state: 'SUBMITTING', createdAt: { lt: overdue } } });
      for (const launch of lost) {
        failed('the provider agent did not report submitting a launch');
        await tx.clusterLaunch.update({ where: { id: launch.id }, data: { state: 'FAILED', reason: 'the agent did not report submitting it', endedAt: now } });
      }
      const silent = await tx.clusterLaunch.findMany({
        where: { providerId: provider.id, state: 'RUNNING', runningAt: { lt: overdue }, workerToken: { workers: { none: {} } } },
      });
      for (const launch of silent) {
        const reason = `its worker did not register within ${settings.registerTimeoutSeconds} s of starting`;
        failed(`a launched worker did not register: ${reason}`);
        await tx.clusterLaunch.update({ where: { id: launch.id }, data: { state: 'CANCELLED', reason, endedAt: now } });
        if (launch.externalId) cancels.push({ type: 'cancel', launchId: launch.id, externalId: launch.externalId, reason });
      }
    }
    // An ended launch's registration token is of no further use: nobody may register with it.
    await tx.workerToken.updateMany({ where: { revokedAt: null, launch: { providerId: provider.id, state: { in: [...FINAL] } } }, data: { revokedAt: now } });

    // New launches, when jobs wait for what its workers bring (not while backing off).
    const launches: LaunchOrder[] = [];
    if (settingsParsed.success && (!backoffUntil || backoffUntil <= now)) {
      const settings = settingsParsed.data;
      const live = await tx.clusterLaunch.findMany({
        where: { providerId: provider.id, state: { notIn: [...FINAL] } },
        select: { state: true, workerToken: { select: { _count: { select: { workers: true } } } } },
      });
      const wanted = launchesWanted(settings, {
        demandDevices: Math.max(0, (await demandDevices(db, provider.teamId, settings)) - (await othersComingDevices(db, provider.id, provider.teamId, settings))),
        coming: live.filter((l) => l.workerToken._count.workers === 0).length,
        live: live.length,
        pending: live.filter((l) => l.state === 'SUBMITTING' || l.state === 'PENDING').length,
      });
      for (let i = 0; i < wanted; i += 1) {
        const workerToken = `${WORKER_TOKEN_PREFIX}${newSecret()}`;
        const token = await tx.workerToken.create({
          data: {
            teamId: provider.teamId,
            name: `${provider.name}: launch`,
            prefix: workerToken.slice(0, DISPLAY_PREFIX_LENGTH),
            tokenHash: hashSecret(workerToken),
            createdById: provider.createdById,
            expiresAt: new Date(now.getTime() + 86_400_000),
          },
        });
        const launch = await tx.clusterLaunch.create({ data: { providerId: provider.id, state: 'SUBMITTING', workerTokenId: token.id } });
        launches.push({ type: 'launch', launchId: launch.id, workerToken, settings });
      }
    }

    await tx.clusterProvider.update({ where: { id: provider.id }, data: { lastSeenAt: now, failures, lastError, backoffUntil } });
    const watch = await tx.clusterLaunch.findMany({
      where: { providerId: provider.id, state: { in: ['SUBMITTING', 'PENDING', 'RUNNING'] }, externalId: { not: null } },
      select: { id: true, externalId: true },
    });
    return {
      orders: [...launches, ...cancels],
      watch: watch.map((l) => ({ launchId: l.id, externalId: l.externalId as string })),
      pollSeconds: pollSeconds(),
    };
  });
}

export async function handleProviderApi(deps: { db: Db }, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  try {
    if (url.pathname === PROVIDER_POLL_ROUTE && req.method === 'POST') return send(res, 200, await poll(deps.db, req));
    throw new Refusal(404, `No route ${url.pathname}`);
  } catch (error) {
    if (error instanceof Refusal) return send(res, error.status, { error: error.message, issues: error.details });
    throw error;
  }
}
