/**
 * Builds the service worker after `next build` (`npm run build` runs both; `npm start` does the
 * same by itself when the sources changed): see server/service-worker-build.ts.
 */
import { repoRoot } from '../server/paths';
import { buildServiceWorker } from '../server/service-worker-build';

const result = await buildServiceWorker(repoRoot);
for (const warning of result.warnings) console.warn(`service worker: ${warning}`);
console.log(`service worker: .next/sw.js precaches ${result.precached} files (${(result.bytes / 1024 ** 2).toFixed(1)} MB)`);
