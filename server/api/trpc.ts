import { initTRPC, TRPCError } from '@trpc/server';
import superjson from 'superjson';
import { z, ZodError } from 'zod';
import { Prisma } from '../db/generated/prisma/client';
import type { Role } from '../db/generated/prisma/enums';
import { roleAtLeast } from '../auth/roles';
import type { Context } from './context';

/** Every procedure says who may call it; the authorization tests read this. */
export interface ProcedureMeta {
  access: 'public' | 'user' | Role;
}

const t = initTRPC
  .context<Context>()
  .meta<ProcedureMeta>()
  .create({
    transformer: superjson,
    // Never send stack traces to the browser.
    isDev: false,
    errorFormatter({ shape, error }) {
      const zodError = error.cause instanceof ZodError ? z.flattenError(error.cause) : null;
      const issues = error.cause instanceof ZodError ? error.cause.issues : null;
      return {
        ...shape,
        message: error.code === 'INTERNAL_SERVER_ERROR' ? 'Internal server error' : shape.message,
        data: { code: shape.data.code, httpStatus: shape.data.httpStatus, path: shape.data.path, zodError, issues },
      };
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

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
    if (result.error.code === 'INTERNAL_SERVER_ERROR') console.error('[trpc]', result.error.cause ?? result.error);
  }
  return result;
});

export const publicProcedure = t.procedure.use(mapErrors).meta({ access: 'public' });

export const userProcedure = t.procedure
  .use(mapErrors)
  .meta({ access: 'user' })
  .use(({ ctx, next }) => {
    if (!ctx.user) throw new TRPCError({ code: 'UNAUTHORIZED', message: 'Sign in first' });
    return next({ ctx: { ...ctx, user: ctx.user } });
  });

export const teamInput = z.object({ teamId: z.string().min(1).max(64) });

/**
 * A procedure on one team's data: the caller must belong to `input.teamId` with at least
 * `role`. Handlers get `ctx.membership` and must scope every query by `ctx.membership.teamId`.
 */
export function teamProcedure(role: Role) {
  return userProcedure
    .meta({ access: role })
    .input(teamInput)
    .use(async ({ ctx, input, next }) => {
      const membership = await ctx.db.membership.findUnique({
        where: { teamId_userId: { teamId: input.teamId, userId: ctx.user.id } },
        select: { teamId: true, role: true },
      });
      // Not a member: answer as if the team did not exist, so ids of other teams leak nothing.
      if (!membership) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such team' });
      if (!roleAtLeast(membership.role, role)) {
        throw new TRPCError({ code: 'FORBIDDEN', message: `This needs the ${role.toLowerCase()} role or higher` });
      }
      return next({ ctx: { ...ctx, membership } });
    });
}
