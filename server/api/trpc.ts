import { randomBytes } from 'node:crypto';
import { initTRPC, TRPCError } from '@trpc/server';
import { transformer } from '../../sdk/transformer';
import { z, ZodError } from 'zod';
import { Prisma } from '../db/generated/prisma/client';
import type { Role } from '../db/generated/prisma/enums';
import { roleAtLeast } from '../auth/roles';
import { SecretUnreadable } from '../secrets/secret-box';
import type { Context } from './context';
import { LineProblems } from './line-problems';

/**
 * Every procedure says who may call it; server/api/authorization.test.ts reads this for every
 * procedure of the root router, so a new procedure cannot skip the check.
 */
export interface ProcedureMeta {
  access: 'public' | 'user' | 'installation-admin' | Role;
}

const t = initTRPC
  .context<Context>()
  .meta<ProcedureMeta>()
  .create({
    transformer,
    // Never send stack traces to the browser.
    isDev: false,
    errorFormatter({ shape, error, path }) {
      const issues = error.cause instanceof ZodError ? error.cause.issues : null;
      const lineProblems = error.cause instanceof LineProblems ? { problems: error.cause.problems, total: error.cause.total } : null;
      // A 500 is logged here, once, with its stack and an id the caller is shown: "see the log"
      // must lead somewhere. (Errors in serialising a response pass only through here.)
      let message = shape.message;
      if (error.code === 'INTERNAL_SERVER_ERROR') {
        const requestId = randomBytes(4).toString('hex');
        console.error(`[trpc] request ${requestId} (${path ?? 'unknown procedure'}) failed:`, error.cause ?? error);
        message = `Internal server error (request ${requestId}; the server log has the details)`;
      }
      return {
        ...shape,
        message,
        data: { code: shape.data.code, httpStatus: shape.data.httpStatus, path: shape.data.path, issues, lineProblems },
      };
    },
  });

export const router = t.router;

/** Database errors that mean "bad request", not "server broke", get their proper codes. */
const mapErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok) {
    const cause = result.error.cause;
    if (cause instanceof Prisma.PrismaClientKnownRequestError) {
      if (cause.code === 'P2025') result.error = new TRPCError({ code: 'NOT_FOUND', message: 'Not found', cause });
      else if (cause.code === 'P2002') result.error = new TRPCError({ code: 'CONFLICT', message: 'Already exists', cause });
      else if (cause.code === 'P2003') result.error = new TRPCError({ code: 'BAD_REQUEST', message: 'Refers to something that does not exist', cause });
    }
    // A team secret an environment needs that no longer decrypts: the caller's admin can fix it.
    if (cause instanceof SecretUnreadable) result.error = new TRPCError({ code: 'PRECONDITION_FAILED', message: cause.message, cause });
  }
  return result;
});

export const publicProcedure = t.procedure.use(mapErrors).meta({ access: 'public' });

export const userProcedure = t.procedure
  .use(mapErrors)
  .meta({ access: 'user' })
  .use(({ ctx, next }) => {
    if (!ctx.caller) throw new TRPCError({ code: 'UNAUTHORIZED', message: ctx.authError ?? 'Sign in first' });
    return next({ ctx: { ...ctx, caller: ctx.caller, user: ctx.caller.user } });
  });

/** Installation-wide settings and the shared worker pool: installation admins, signed in (no API keys). */
export const installationAdminProcedure = userProcedure
  .meta({ access: 'installation-admin' })
  .use(({ ctx, next }) => {
    if (!ctx.user.isInstallationAdmin || ctx.caller.apiKey) {
      throw new TRPCError({ code: 'FORBIDDEN', message: 'This needs an installation admin' });
    }
    return next();
  });

const teamInput = z.object({ teamId: z.string().min(1).max(64) });

/** The answers of the team gate, which the authorization test tells apart from handlers' own. */
export const NO_SUCH_TEAM = 'No such team';
const needsRole = (role: Role) => `This needs the ${role.toLowerCase()} role or higher`;

/**
 * A procedure on one team's data: the caller must belong to `input.teamId` with at least
 * `role` (an API key acts with its creator's current role, in its own team only). Handlers get
 * `ctx.membership` and must scope every query by `ctx.membership.teamId`.
 */
export function teamProcedure(role: Role) {
  return userProcedure
    .meta({ access: role })
    .input(teamInput)
    .use(async ({ ctx, input, next }) => {
      const keyTeam = ctx.caller.apiKey?.teamId;
      const membership =
        keyTeam && keyTeam !== input.teamId
          ? null
          : await ctx.db.membership.findUnique({
              where: { teamId_userId: { teamId: input.teamId, userId: ctx.user.id } },
              select: { teamId: true, role: true },
            });
      // Not a member: answer as if the team did not exist, so ids of other teams leak nothing.
      if (!membership) throw new TRPCError({ code: 'NOT_FOUND', message: NO_SUCH_TEAM });
      if (!roleAtLeast(membership.role, role)) throw new TRPCError({ code: 'FORBIDDEN', message: needsRole(role) });
      return next({ ctx: { ...ctx, membership } });
    });
}
