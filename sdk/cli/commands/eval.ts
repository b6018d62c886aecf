import type { CatalogueKey } from '../../live';
import type { Command } from '../args';
import type { Connection } from '../client';
import { CliError, EXIT, UsageError } from '../errors';
import { call, type CommandContext } from './context';
import { followToEnd, outcomeJson, printOutcome } from './follow';

type EvalCommand = Extract<Command, { name: 'eval' }>;

const SCORE_KEYS: CatalogueKey[] = [
  'eval/score', 'eval/mean_return', 'eval/mean_return_low', 'eval/mean_return_high', 'eval/success_rate', 'eval/success_rate_low', 'eval/success_rate_high',
  'eval/win_rate', 'eval/win_rate_low', 'eval/win_rate_high', 'eval/draw_rate', 'eval/loss_rate', 'eval/wins', 'eval/losses', 'eval/draws', 'eval/games', 'eval/errors',
  'eval/legal_move_rate', 'eval/mean_length', 'eval/tool_use_rate',
];

/** The environment version the checkpoint's own job trained on, when --env is not given. */
export async function environmentOf(conn: Connection, checkpointId: string): Promise<string> {
  const checkpoints = await call(conn, () => conn.api.runs.checkpoints.query({ teamId: conn.teamId, limit: 500 }));
  const checkpoint = checkpoints.find((c) => c.id === checkpointId);
  if (!checkpoint) throw new CliError(`no checkpoint ${checkpointId} in this team (among its latest 500); pass --env to evaluate it anyway`, EXIT.NOT_FOUND);
  if (!checkpoint.jobId) throw new UsageError(`checkpoint ${checkpointId} has no job to take the environment from: pass --env <environment version id>`);
  const job = await call(conn, () => conn.api.jobs.get.query({ teamId: conn.teamId, jobId: checkpoint.jobId! }));
  const envId = (job.config as { environmentVersionId?: unknown } | null)?.environmentVersionId;
  if (typeof envId !== 'string') throw new UsageError(`checkpoint ${checkpointId} comes from a ${job.kind} job without an environment: pass --env <environment version id>`);
  return envId;
}

/**
 * A data-dependent environment is evaluated on its held-out split: the team's dataset
 * `<environment>/<heldOut file>` (the built-in templates are seeded with theirs; `whetstone run`
 * from a folder uploads the train file the same way). Null for an environment without a dataset.
 */
async function heldOutDataset(ctx: CommandContext, conn: Connection, environmentVersionId: string): Promise<string | null> {
  const version = await call(conn, () => conn.api.environments.version.query({ teamId: conn.teamId, versionId: environmentVersionId }));
  const dataset = (version.manifest as { dataset?: { train?: string; heldOut?: string } } | null)?.dataset;
  if (!dataset) return null;
  const env = await call(conn, () => conn.api.environments.get.query({ teamId: conn.teamId, environmentId: version.environmentId }));
  const file = dataset.heldOut ?? dataset.train;
  const name = `${env.name}/${file}`;
  const found = (await call(conn, () => conn.api.datasets.list.query({ teamId: conn.teamId, includeArchived: false }))).find((d) => d.name === name);
  if (!found?.latest) throw new CliError(`${env.name} is evaluated on its held-out rows, and the team has no dataset named ${name}`, EXIT.NOT_FOUND, [`upload it: whetstone datasets upload <${file}> --name ${name}`]);
  ctx.out.line(`dataset ${name}: version ${found.latest.version} (${found.latest.rowCount} rows)`);
  return found.latest.id;
}

export async function evalCommand(ctx: CommandContext, cmd: EvalCommand): Promise<number> {
  const conn = await ctx.connect();
  const environmentVersionId = cmd.env ?? (await environmentOf(conn, cmd.checkpointId));
  const datasetVersionId = await heldOutDataset(ctx, conn, environmentVersionId);
  const config = {
    checkpointId: cmd.checkpointId, environmentVersionId, against: cmd.against, games: cmd.games,
    ...(datasetVersionId ? { datasetVersionId } : {}), ...(cmd.temperature !== undefined ? { temperature: cmd.temperature } : {}),
  };
  const job = await call(conn, () => conn.api.jobs.submit.mutate({ teamId: conn.teamId, kind: 'EVAL', config, ...(cmd.priority !== undefined ? { priority: cmd.priority } : {}) }));
  const against = typeof cmd.against === 'string' ? cmd.against : `checkpoint ${cmd.against.checkpointId}`;
  ctx.out.line(`submitted job ${job.id}: EVAL of ${cmd.checkpointId}, ${cmd.games} games against ${against}`);
  const document = { job: { id: job.id, kind: job.kind, state: job.state, priority: job.priority, createdAt: job.createdAt }, config };
  if (!cmd.watch) {
    ctx.out.document(document);
    return EXIT.OK;
  }
  const outcome = await followToEnd(ctx, conn, job.id, { total: null, logs: 'all', keys: ['eval/score'] });
  printOutcome(ctx, outcome, SCORE_KEYS);
  ctx.out.document({ ...document, final: outcomeJson(outcome) });
  return outcome.exitCode;
}
