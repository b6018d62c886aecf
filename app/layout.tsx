import type { Metadata, Viewport } from 'next';
import { connection } from 'next/server';
import type { ReactNode } from 'react';
import { Providers } from './providers';
import { ServiceWorker } from './_ui/service-worker';
import './globals.css';

export const metadata: Metadata = {
  title: 'Whetstone',
  description: 'A browser IDE for reinforcement learning of language-model agents',
  icons: { icon: '/favicon.svg', apple: '/icons/icon-192.png' },
};

export const viewport: Viewport = {
  themeColor: [
    { media: '(prefers-color-scheme: light)', color: '#f9fafb' },
    { media: '(prefers-color-scheme: dark)', color: '#111827' },
  ],
};

export default async function RootLayout({ children }: { children: ReactNode }) {
  // Every page renders per request: its scripts carry the request's CSP nonce (server/security-headers.ts).
  await connection();
  return (
    <html lang="en">
      <body>
        <Providers>{children}</Providers>
        <ServiceWorker />
      </body>
    </html>
  );
}
