import fs from 'node:fs';
import path from 'node:path';
import type { NextConfig } from 'next';

/**
 * Turbopack resolves only under its root (the project folder by default). A git worktree may share
 * another checkout's node_modules through a symlink: the root then takes in the folder they really
 * live in, so the build finds `next` and every package.
 */
function turbopackRoot(project: string): string {
  const modules = path.join(project, 'node_modules');
  const real = fs.existsSync(modules) ? path.dirname(fs.realpathSync(modules)) : project;
  let root = project;
  while (path.relative(root, real).startsWith('..')) root = path.dirname(root);
  return root;
}

const root = turbopackRoot(process.cwd());

const config: NextConfig = {
  // `npm run typecheck` and `npm run lint` check the whole project; the build need not repeat it.
  typescript: { ignoreBuildErrors: true },
  poweredByHeader: false,
  reactStrictMode: true,
  turbopack: { root },
  outputFileTracingRoot: root,
  // Browsers ask for /favicon.ico by themselves when a page's <link rel="icon"> has not reached
  // them yet (Next.js streams a page's metadata): the SVG icon answers it, rather than a 404.
  rewrites: async () => [{ source: '/favicon.ico', destination: '/favicon.svg' }],
};

export default config;
