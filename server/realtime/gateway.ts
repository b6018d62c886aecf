import type { Server as HttpServer } from 'node:http';
import { Server } from 'socket.io';
import { z } from 'zod';
import type { Auth } from '../auth/auth';
import { resolveCaller } from '../auth/caller';
import type { Db } from '../db/client';

/** Rooms a browser may join: one per run (job), named after it. */
const subscribeInput = z.object({ room: z.string().regex(/^run:[A-Za-z0-9_-]{1,64}$/) });

/**
 * socket.io on the same HTTP server, at /socket.io. A connection needs a valid session or API
 * key; `subscribe` joins a run's room only if the caller belongs to the run's team, checked the
 * same way tRPC team procedures check it.
 */
export function attachRealtime(httpServer: HttpServer, db: Db, auth: Auth): Server {
  const io = new Server(httpServer, {
    path: '/socket.io',
    serveClient: false,
    // Same origin only: the browser app is served by this server.
    cors: { origin: false },
    maxHttpBufferSize: 1_000_000,
  });
  io.use(async (socket, next) => {
    try {
      const caller = await resolveCaller(db, auth, socket.request.headers);
      if (!caller) return next(new Error('UNAUTHORIZED: sign in first'));
      socket.data.caller = caller;
      next();
    } catch {
      next(new Error('INTERNAL: could not check the session'));
    }
  });
  io.on('connection', (socket) => {
    const caller = socket.data.caller as NonNullable<Awaited<ReturnType<typeof resolveCaller>>>;
    socket.on('subscribe', async (payload: unknown, ack?: (answer: { ok: boolean; error?: string }) => void) => {
      const reply = typeof ack === 'function' ? ack : () => {};
      const parsed = subscribeInput.safeParse(payload);
      if (!parsed.success) return reply({ ok: false, error: 'BAD_REQUEST: room must look like run:<id>' });
      const jobId = parsed.data.room.slice('run:'.length);
      const job = await db.job.findUnique({ where: { id: jobId }, select: { teamId: true } });
      const allowed =
        job &&
        (!caller.apiKey || caller.apiKey.teamId === job.teamId) &&
        (await db.membership.findUnique({ where: { teamId_userId: { teamId: job.teamId, userId: caller.user.id } } }));
      // Another team's run and a missing run look the same.
      if (!allowed) return reply({ ok: false, error: 'NOT_FOUND: no such run' });
      await socket.join(parsed.data.room);
      reply({ ok: true });
    });
    socket.on('unsubscribe', async (payload: unknown) => {
      const parsed = subscribeInput.safeParse(payload);
      if (parsed.success) await socket.leave(parsed.data.room);
    });
  });
  return io;
}
