import type { Db } from '../db/client';
import type { Role } from '../db/generated/prisma/enums';
import type { RealtimeHub } from '../realtime/gateway';

// What the jobs service reads of a tRPC team procedure's context: only these fields, so that a
// router passes its `ctx` as it is and a test or another service can build one by hand.

/** A signed-in member acting in one team. */
export interface TeamMemberContext {
  db: Db;
  user: { id: string };
  membership: { teamId: string; role: Role };
}

/** A member who may also reach workers (a cancel signals the worker holding the job). */
export interface TeamMemberWithWorkersContext extends TeamMemberContext {
  deps: { realtime: Pick<RealtimeHub, 'signalWorker'> };
}
