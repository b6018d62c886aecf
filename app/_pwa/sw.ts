/**
 * The service worker (built by server/service-worker-build.ts into .next/sw.js, served at /sw.js):
 * it makes the installed app open in its own window and, when the server does not answer, shows
 * the "server unreachable" page instead of the browser's error. Only the app's static files are
 * cached: pages and API answers always come from the server, so nothing stale is ever shown as
 * if it were current.
 */
import { CacheFirst, ExpirationPlugin, NetworkOnly, type PrecacheEntry, Serwist } from 'serwist';

/** Where `/~offline` and the build's static files are listed: injected at build time. */
declare const self: { __SW_MANIFEST: (PrecacheEntry | string)[] | undefined; addEventListener: (type: 'fetch', listener: (event: { request: Request; stopImmediatePropagation: () => void }) => void) => void };

/** The page shown for a navigation the server does not answer (app/~offline/page.tsx). */
const OFFLINE_PAGE = '/~offline';

// Web workers' scripts (Monaco's TypeScript worker) bypass this worker entirely: Turbopack's
// worker entry reads its bootstrap config from the URL's fragment, and an answer from a cache
// carries the URL without it ("Missing worker bootstrap config": no type checking in the editor).
// Registered before Serwist's listener, so the browser fetches them itself.
self.addEventListener('fetch', (event) => {
  if (event.request.destination === 'worker' || event.request.destination === 'sharedworker') event.stopImmediatePropagation();
});

const serwist = new Serwist({
  precacheEntries: self.__SW_MANIFEST,
  skipWaiting: true,
  clientsClaim: true,
  runtimeCaching: [
    // Pages: always from the server; when it does not answer, the fallback below.
    { matcher: ({ request }) => request.mode === 'navigate', handler: new NetworkOnly() },
    // The build's files are named by their content: once fetched, they never change.
    {
      matcher: ({ url, sameOrigin }) => sameOrigin && url.pathname.startsWith('/_next/static/'),
      handler: new CacheFirst({ cacheName: 'next-static', plugins: [new ExpirationPlugin({ maxEntries: 512, maxAgeFrom: 'last-used' })] }),
    },
  ],
  fallbacks: { entries: [{ url: OFFLINE_PAGE, matcher: ({ request }) => request.destination === 'document' }] },
});

serwist.addEventListeners();
