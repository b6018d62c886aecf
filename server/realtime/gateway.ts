import type { Server as HttpServer } from 'node:http';
import { Server } from 'socket.io';
import type { Db } from '../db/client';
import { sessionFromRequest } from '../auth/session';

/**
 * socket.io on the same HTTP server, at /socket.io. A connection is accepted only with a valid
 * session; rooms (one per run, scoped by team) are joined through `subscribe`, which checks
 * membership like the tRPC procedures do.
 */
export function attachRealtime(httpServer: HttpServer, db: Db): Server {
  const io = new Server(httpServer, {
    path: '/socket.io',
    serveClient: false,
    // Same origin only: the browser app is served by this server.
    cors: { origin: false },
    maxHttpBufferSize: 1_000_000,
  });
  io.use(async (socket, next) => {
    try {
      const session = await sessionFromRequest(db, socket.request);
      if (!session) return next(new Error('UNAUTHORIZED: sign in first'));
      socket.data.userId = session.user.id;
      next();
    } catch {
      next(new Error('INTERNAL: could not check the session'));
    }
  });
  io.on('connection', (socket) => {
    socket.emit('hello', { userId: socket.data.userId as string });
  });
  return io;
}
