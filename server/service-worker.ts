import fs from 'node:fs';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { repoRoot } from './paths';

/** Where the production build puts the service worker (service-worker-build.ts), under the repository. */
export const BUILT_SERVICE_WORKER = '.next/sw.js';

/**
 * Answers /sw.js: the built service worker, or 404 before a production build (and in `npm run
 * dev`, which registers none). Browsers check it for updates on their own; no-cache makes them
 * ask every time rather than keep an old one.
 */
export function sendServiceWorker(res: ServerResponse, root = repoRoot): void {
  const file = path.join(root, BUILT_SERVICE_WORKER);
  let body: Buffer;
  try {
    body = fs.readFileSync(file);
  } catch {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    res.end('No service worker: this server runs without a production build.');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' });
  res.end(body);
}
