import { betterAuth, type BetterAuthPlugin } from 'better-auth';
import { prismaAdapter } from 'better-auth/adapters/prisma';
import { APIError, createAuthEndpoint, createAuthMiddleware } from 'better-auth/api';
import { setSessionCookie } from 'better-auth/cookies';
import { z } from 'zod';
import type { Db } from '../db/client';
import { audit } from './audit';
import { findUsableInvitation, INVITATION_HEADER } from './invitations';
import { consumeSignInLink } from './session';
import { SIGN_IN_FAILED, signInBlocked } from './throttle';
import { isOpenSignUp } from './settings';

// Accounts and sessions come from better-auth: e-mail and password with scrypt (memory-hard)
// hashes, sessions in httpOnly SameSite=Lax cookies signed with the server's secret, origin
// checks on every state-changing request (CSRF), and rate limits. Teams, roles, invitations, API
// keys and worker tokens are Whetstone's own (server/api/routers), because they carry rules of
// ours (single-use invitation links, worker pools, quotas) that better-auth's plugins do not.

export interface AuthOptions {
  db: Db;
  baseURL: string;
  secret: string;
  trustedOrigins?: string[];
  secureCookies: boolean;
  /** Called for the team a new account gets. */
  seedTeam: (teamId: string) => Promise<void>;
}

function ipOf(headers: Headers | undefined): string | null {
  return headers?.get('x-whetstone-client-ip') ?? null;
}

/** GET /api/auth/local-sign-in?token=…: the one-time link `npm start` prints. */
function localSignIn(db: Db): BetterAuthPlugin {
  return {
    id: 'whetstone-local-sign-in',
    endpoints: {
      localSignIn: createAuthEndpoint(
        '/local-sign-in',
        { method: 'GET', query: z.object({ token: z.string().max(200) }) },
        async (ctx) => {
          const userId = await consumeSignInLink(db, ctx.query.token);
          const user = userId ? await ctx.context.internalAdapter.findUserById(userId) : null;
          if (!user) {
            await audit(db, { action: 'auth.local_link_rejected', ipAddress: ipOf(ctx.headers) });
            throw ctx.redirect('/sign-in?error=link');
          }
          const session = await ctx.context.internalAdapter.createSession(user.id);
          await setSessionCookie(ctx, { session, user });
          await audit(db, { actorUserId: user.id, action: 'auth.sign_in', details: { method: 'local-link' }, ipAddress: ipOf(ctx.headers) });
          throw ctx.redirect('/');
        },
      ),
    },
  };
}

export function createAuth({ db, baseURL, secret, trustedOrigins = [], secureCookies, seedTeam }: AuthOptions) {
  return betterAuth({
    appName: 'Whetstone',
    baseURL,
    basePath: '/api/auth',
    secret,
    trustedOrigins,
    database: prismaAdapter(db, { provider: 'postgresql' }),
    telemetry: { enabled: false },
    emailAndPassword: {
      enabled: true,
      autoSignIn: true,
      minPasswordLength: 10,
      maxPasswordLength: 128,
    },
    session: { expiresIn: 30 * 86400, updateAge: 86400 },
    advanced: {
      cookiePrefix: 'whetstone',
      useSecureCookies: secureCookies,
      defaultCookieAttributes: { httpOnly: true, sameSite: 'lax' },
      ipAddress: { ipAddressHeaders: ['x-whetstone-client-ip'] },
      // better-auth turns its origin (CSRF) check off under NODE_ENV=test; we want it everywhere.
      disableOriginCheck: false,
      disableCSRFCheck: false,
    },
    rateLimit: {
      enabled: true,
      window: 60,
      max: 200,
      customRules: { '/sign-in/email': { window: 60, max: 30 }, '/sign-up/email': { window: 60, max: 30 } },
    },
    hooks: {
      before: createAuthMiddleware(async (ctx) => {
        if (ctx.path === '/sign-in/email') {
          const email = String((ctx.body as { email?: unknown })?.email ?? '').slice(0, 320);
          const blocked = await signInBlocked(db, email, ipOf(ctx.headers));
          if (blocked) throw new APIError('TOO_MANY_REQUESTS', { message: blocked });
        }
        if (ctx.path === '/sign-up/email') {
          const token = ctx.headers?.get(INVITATION_HEADER);
          if (token) {
            const email = String((ctx.body as { email?: unknown })?.email ?? '');
            const found = await findUsableInvitation(db, token, email);
            if ('error' in found) throw new APIError('BAD_REQUEST', { message: found.error });
          } else if (!(await isOpenSignUp(db))) {
            throw new APIError('FORBIDDEN', { message: 'Sign-up is by invitation only on this installation. Ask an admin for an invitation link.' });
          }
        }
      }),
      after: createAuthMiddleware(async (ctx) => {
        if (ctx.path !== '/sign-in/email') return;
        const email = String((ctx.body as { email?: unknown })?.email ?? '').toLowerCase().slice(0, 320);
        const returned = ctx.context.returned;
        const failed = returned instanceof APIError || returned instanceof Error;
        if (failed && (returned as APIError).status !== 'TOO_MANY_REQUESTS') {
          await audit(db, { action: SIGN_IN_FAILED, targetType: 'email', targetId: email, ipAddress: ipOf(ctx.headers) });
        } else if (!failed) {
          const userId = ctx.context.newSession?.user.id;
          await audit(db, { actorUserId: userId, action: 'auth.sign_in', details: { method: 'password' }, ipAddress: ipOf(ctx.headers) });
        }
      }),
    },
    databaseHooks: {
      user: {
        create: {
          after: async (user, ctx) => {
            // The first account of an installation manages it; everyone else gets a team of their
            // own unless an invitation brings them into one.
            const others = await db.user.count({ where: { id: { not: user.id } } });
            if (others === 0) await db.user.update({ where: { id: user.id }, data: { isInstallationAdmin: true } });
            if (ctx?.headers?.get(INVITATION_HEADER)) return;
            await seedTeam(await createPersonalTeam(db, user.id, user.name));
          },
        },
      },
    },
    plugins: [localSignIn(db)],
  });
}

export type Auth = ReturnType<typeof createAuth>;

async function createPersonalTeam(db: Db, userId: string, name: string): Promise<string> {
  const base = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 30) || 'team';
  const slug = `${base}-${Math.random().toString(36).slice(2, 8)}`;
  const team = await db.team.create({
    data: {
      name: `${name}'s team`.slice(0, 80),
      slug,
      quota: { create: {} },
      memberships: { create: { userId, role: 'OWNER' } },
    },
  });
  await audit(db, { teamId: team.id, actorUserId: userId, action: 'team.created', targetType: 'team', targetId: team.id });
  return team.id;
}
