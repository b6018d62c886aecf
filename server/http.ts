import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHTTPHandler } from '@trpc/server/adapters/standalone';
import { consumeSignInLink, createSession, sessionCookie } from './auth/session';
import { createContext, type ServerDeps } from './api/context';
import { appRouter } from './api/root';

export type NextHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

/** tRPC bodies above this size are refused (413) before they are parsed. */
const MAX_BODY_BYTES = 1_000_000;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

function sendPage(res: ServerResponse, status: number, title: string, text: string, refreshSeconds?: number): void {
  const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>` +
      (refreshSeconds ? `<meta http-equiv="refresh" content="${refreshSeconds}">` : '') +
      `<style>body{font:16px system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#222}</style>` +
      `</head><body><h1>${esc(title)}</h1><p>${esc(text)}</p></body></html>`,
  );
}

/**
 * The one request listener: health, tRPC, the local sign-in link, then Next.js for everything
 * else. socket.io attaches to the same server for /socket.io.
 */
export function createRequestListener(deps: ServerDeps, getNext: () => NextHandler | null) {
  const trpc = createHTTPHandler({
    router: appRouter,
    basePath: '/api/trpc/',
    maxBodySize: MAX_BODY_BYTES,
    createContext: ({ req, res }) => createContext(deps, req, res),
  });

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    try {
      if (url.pathname === '/api/health') {
        const report = await deps.health();
        return sendJson(res, report.database.reachable ? 200 : 503, report);
      }
      if (url.pathname.startsWith('/api/trpc/')) return trpc(req, res);
      if (url.pathname === '/auth/local') {
        const userId = await consumeSignInLink(deps.db, url.searchParams.get('token') ?? '');
        if (!userId) {
          return sendPage(res, 400, 'Sign-in link not valid',
            'This sign-in link is wrong, expired or already used. Restart Whetstone (npm start) to print a new one.');
        }
        const token = await createSession(deps.db, userId, { ip: req.socket.remoteAddress, userAgent: req.headers['user-agent'] });
        res.writeHead(303, { location: '/', 'set-cookie': sessionCookie(token, deps.secureCookies), 'cache-control': 'no-store' });
        return void res.end();
      }
      if (url.pathname.startsWith('/api/')) return sendJson(res, 404, { error: `No route ${url.pathname}` });
      const next = getNext();
      if (!next) return sendPage(res, 503, 'Whetstone is starting', 'The web app is being prepared; this page reloads by itself.', 3);
      return await next(req, res);
    } catch (error) {
      console.error('[http]', error);
      if (!res.headersSent) sendJson(res, 500, { error: 'Internal server error' });
      else res.end();
    }
  };
}
