import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

// The security headers of every response of the one HTTP server (server/http.ts): pages, static
// files, tRPC, auth, health and the worker API. Environments, observations, completions, READMEs
// and dataset rows are written by user code, models or other people, and the pages show them:
// the Content-Security-Policy makes a script that slips into a page inert.
//
// Scripts run only with the request's nonce ('strict-dynamic' lets those scripts load the app's
// chunks); Next.js reads the nonce from the request's own Content-Security-Policy header, which is
// set here before the request reaches Next (what a proxy.ts would do), and puts it on its scripts.
// A nonce is fresh per request, so every page renders dynamically (app/layout.tsx).

export interface SecurityOptions {
  /** `npm run dev`: React's development build evaluates strings (its error overlay), so 'unsafe-eval' is allowed there only. */
  dev?: boolean;
}

/** The policy for one response; `host` (the request's, checked) adds its WebSocket origins for socket.io. */
function contentSecurityPolicy(nonce: string, host: string | null, opts: SecurityOptions = {}): string {
  const sockets = host ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${opts.dev ? " 'unsafe-eval'" : ''}`,
    // Monaco and React set inline styles; a style cannot run code.
    "style-src 'self' 'unsafe-inline'",
    // Monaco's web workers come from the origin (or blob: URLs it makes); so does the service worker.
    "worker-src 'self' blob:",
    `connect-src 'self'${sockets}`,
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "manifest-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** A Host header fit to be written into the policy: a name or address and a port, nothing else. */
function safeHost(host: string | undefined): string | null {
  return host && /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host) ? host : null;
}

/**
 * Sets the security headers on `res` and hands the request's nonce to Next.js through the
 * request's Content-Security-Policy header (a client's own such header is replaced).
 */
export function applySecurityHeaders(req: IncomingMessage, res: ServerResponse, opts: SecurityOptions = {}): void {
  const nonce = randomBytes(16).toString('base64');
  const policy = contentSecurityPolicy(nonce, safeHost(req.headers.host), opts);
  req.headers['content-security-policy'] = policy;
  delete req.headers['content-security-policy-report-only'];
  res.setHeader('Content-Security-Policy', policy);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'same-origin');
  // For browsers that predate frame-ancestors.
  res.setHeader('X-Frame-Options', 'DENY');
}
