import type { NextConfig } from 'next';

const config: NextConfig = {
  // `npm run typecheck` and `npm run lint` check the whole project; the build need not repeat it.
  typescript: { ignoreBuildErrors: true },
  poweredByHeader: false,
  reactStrictMode: true,
};

export default config;
