import fs from 'node:fs';
import path from 'node:path';
import { injectManifest } from '@serwist/build';
import { serwist } from '@serwist/next/config';
import { build } from 'esbuild';
import { BUILT_SERVICE_WORKER } from './service-worker';

// The installable app's service worker (app/_pwa/sw.ts), built after `next build` the way
// @serwist/next's configurator mode does (it works with Turbopack, which Next 16 builds with):
// @serwist/next/config lists the build's static files and the public folder for the precache, the
// worker is bundled with esbuild, and @serwist/build injects that list into it. The result lives
// in the build folder (.next/sw.js), so it is rebuilt with every build and never committed; the
// server answers /sw.js from there (service-worker.ts).

const SOURCE = 'app/_pwa/sw.ts';

/** Builds .next/sw.js from a finished `next build` in `root`; answers how many files it precaches. */
export async function buildServiceWorker(root: string): Promise<{ precached: number; bytes: number; warnings: string[] }> {
  const bundled = path.join(root, '.next', 'cache', 'sw.bundle.js');
  const buildId = fs.readFileSync(path.join(root, '.next', 'BUILD_ID'), 'utf8').trim();
  const options = await serwist(
    {
      swSrc: bundled,
      swDest: path.join(root, BUILT_SERVICE_WORKER),
      globDirectory: root,
      // Every page renders per request (its CSP nonce): none is prerendered to precache.
      precachePrerendered: false,
      // The page shown when the server does not answer, refreshed with every build.
      additionalPrecacheEntries: [{ url: '/~offline', revision: buildId }],
    },
    undefined,
    { cwd: root, isDev: false },
  );
  await build({
    entryPoints: [path.join(root, SOURCE)],
    outfile: bundled,
    bundle: true,
    minify: true,
    format: 'iife',
    target: options.esbuildOptions?.target,
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const { swSrc, swDest, globDirectory, globPatterns, globIgnores, manifestTransforms, dontCacheBustURLsMatching, additionalPrecacheEntries } = options;
  const result = await injectManifest({
    swSrc, swDest, globDirectory, globPatterns, globIgnores, manifestTransforms, dontCacheBustURLsMatching, additionalPrecacheEntries,
  });
  fs.rmSync(bundled, { force: true });
  return { precached: result.count, bytes: result.size, warnings: result.warnings };
}
