import { baseNameSchema } from '../../job-config';
import type { Api, Connection } from '../client';
import { UsageError } from '../errors';
import { call } from './context';

/**
 * How commands name what they start from or serve: an imported model by its name or id, a
 * checkpoint by a base's name (the team's named checkpoints) or its id.
 */

type ImportedModel = Awaited<ReturnType<Api['models']['list']['query']>>[number];
type Base = Awaited<ReturnType<Api['runs']['bases']['query']>>[number];

/** The team's imported model of that name (or id); undefined when there is none. */
export async function findModel(conn: Connection, named: string): Promise<{ model: ImportedModel | undefined; models: ImportedModel[] }> {
  const models = await call(conn, () => conn.api.models.list.query({ teamId: conn.teamId }));
  return { model: models.find((m) => m.name === named) ?? models.find((m) => m.id === named), models };
}

/** The imported model of that name (or id), or a usage error that lists the team's. */
export async function modelNamed(conn: Connection, named: string): Promise<ImportedModel> {
  const { model, models } = await findModel(conn, named);
  if (!model) throw new UsageError(`no imported model named ${named} in this team${models.length > 0 ? `: ${models.map((m) => m.name).join(', ')}` : ' (whetstone models import <folder>)'}`);
  return model;
}

/**
 * A checkpoint by a base's name or its id. A base of that name wins; anything else goes to the
 * server as an id, which refuses one the team does not have.
 */
export async function checkpointNamed(conn: Connection, ref: string): Promise<{ checkpointId: string; base: Base | null }> {
  if (!baseNameSchema.safeParse(ref).success) return { checkpointId: ref, base: null };
  const [base] = await call(conn, () => conn.api.runs.bases.query({ teamId: conn.teamId, name: ref }));
  return base ? { checkpointId: base.id, base } : { checkpointId: ref, base: null };
}
