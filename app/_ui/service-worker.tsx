'use client';
import { useEffect } from 'react';

/**
 * Registers the service worker (app/_pwa/sw.ts, served at /sw.js) in production builds, where it
 * exists: it makes the app installable and shows the "server unreachable" page when the server is
 * down. `npm run dev` has none (a stale worker would get in the way of reloading).
 */
export function ServiceWorker() {
  useEffect(() => {
    if (process.env.NODE_ENV !== 'production' || !('serviceWorker' in navigator)) return;
    navigator.serviceWorker.register('/sw.js', { scope: '/' }).catch((error: unknown) => {
      // Not fatal: the app works without it (a browser may refuse workers, e.g. in private windows).
      console.warn('The service worker could not be registered:', error);
    });
  }, []);
  return null;
}
