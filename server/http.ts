import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHTTPHandler } from '@trpc/server/adapters/standalone';
import { toNodeHandler } from 'better-auth/node';
import { createContext, type ServerDeps } from './api/context';
import { appRouter } from './api/root';
import { handleWorkerApi } from './workers/api';
import { handleProviderApi } from './providers/agent-api';
import { EXPORT_ROUTE, handleExportDownload } from './models/export-route';
import { MAX_REQUEST_BYTES } from '../sdk/limits';
import { applySecurityHeaders, type SecurityOptions } from './security-headers';
import { sendServiceWorker } from './service-worker';

export type NextHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

/**
 * tRPC bodies above this size are refused (413) before they are parsed. Large enough for a dataset
 * upload (datasets.upload takes up to 15 million characters) and an environment with its files.
 */
const MAX_BODY_BYTES = MAX_REQUEST_BYTES;

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
 * A state-changing request that carries the session cookie must come from one of our own pages
 * (cross-site request forgery). Requests with an API key and no cookie are not a browser's.
 */
function crossSiteWithCookie(req: IncomingMessage, trustedOrigins: string[]): boolean {
  if (req.method === 'GET' || req.method === 'HEAD' || !req.headers.cookie) return false;
  const origin = req.headers.origin;
  if (!origin) return req.headers['sec-fetch-site'] === 'cross-site';
  return !trustedOrigins.includes(origin);
}

/**
 * The one request listener: the security headers (security-headers.ts) on every answer, then
 * health, auth (better-auth), tRPC, the worker API, checkpoint exports, then Next.js for everything else. socket.io
 * attaches to the same server for /socket.io.
 */
export function createRequestListener(deps: ServerDeps, getNext: () => NextHandler | null, security: SecurityOptions = {}) {
  const trpc = createHTTPHandler({
    router: appRouter,
    basePath: '/api/trpc/',
    maxBodySize: MAX_BODY_BYTES,
    createContext: ({ req, res }) => createContext(deps, req, res),
  });
  const authHandler = toNodeHandler(deps.auth);
  const workerApi = {
    db: deps.db,
    blobs: deps.blobs,
    publish: deps.realtime.publishRun,
    // The gateway's: one instance for both ways a daemon calls (their batches are shared).
    attempts: deps.realtime.attempts,
    secretsKey: deps.secretsKey,
  };

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    applySecurityHeaders(req, res, security);
    // better-auth reads the client's address from this header; set it from the socket so a
    // client cannot choose its own (sign-in limits are per address).
    req.headers['x-whetstone-client-ip'] = req.socket.remoteAddress ?? '';
    try {
      if (url.pathname === '/api/health') {
        const report = await deps.health();
        return sendJson(res, report.database.reachable ? 200 : 503, report);
      }
      if (url.pathname.startsWith('/api/auth/')) return await authHandler(req, res);
      if (url.pathname.startsWith('/api/trpc/')) {
        if (crossSiteWithCookie(req, deps.trustedOrigins)) {
          return sendJson(res, 403, { error: 'Cross-site request refused' });
        }
        return trpc(req, res);
      }
      if (url.pathname.startsWith('/api/workers/')) return await handleWorkerApi(workerApi, req, res, url);
      if (url.pathname.startsWith('/api/providers/')) return await handleProviderApi(deps, req, res, url);
      if (url.pathname.startsWith(EXPORT_ROUTE)) return await handleExportDownload(deps, req, res, url);
      if (url.pathname.startsWith('/api/')) return sendJson(res, 404, { error: `No route ${url.pathname}` });
      if (url.pathname === '/sw.js') return sendServiceWorker(res);
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
