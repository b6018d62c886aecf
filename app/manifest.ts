import type { MetadataRoute } from 'next';

/** The web app manifest (served at /manifest.webmanifest): what an installed Whetstone is called and how it opens. */
export default function manifest(): MetadataRoute.Manifest {
  return {
    name: 'Whetstone',
    short_name: 'Whetstone',
    description: 'A browser IDE for reinforcement learning of language-model agents',
    start_url: '/',
    scope: '/',
    display: 'standalone',
    background_color: '#f6f7f9',
    theme_color: '#1f2937',
    icons: [
      { src: '/icons/icon.svg', sizes: 'any', type: 'image/svg+xml' },
      { src: '/icons/icon-192.png', sizes: '192x192', type: 'image/png' },
      { src: '/icons/icon-512.png', sizes: '512x512', type: 'image/png' },
      { src: '/icons/icon-maskable-512.png', sizes: '512x512', type: 'image/png', purpose: 'maskable' },
    ],
  };
}
