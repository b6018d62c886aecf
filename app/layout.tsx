import type { Metadata, Viewport } from 'next';
import { cookies } from 'next/headers';
import type { ReactNode } from 'react';
import { Providers } from './providers';
import { ServiceWorker } from './_ui/service-worker';
import { parseThemeChoice, THEME_COOKIE } from './_ui/theme-choice';
import './globals.css';

export const metadata: Metadata = {
  title: 'Whetstone',
  description: 'A browser IDE for reinforcement learning of language-model agents',
  icons: { icon: '/favicon.svg', apple: '/icons/icon-192.png' },
};

export const viewport: Viewport = {
  themeColor: [
    { media: '(prefers-color-scheme: light)', color: '#f6f7f9' },
    { media: '(prefers-color-scheme: dark)', color: '#0e1116' },
  ],
};

export default async function RootLayout({ children }: { children: ReactNode }) {
  // The user's theme choice (app/_ui/theme.tsx); "system" leaves it to prefers-color-scheme.
  // Reading the request's cookies also renders every page per request, as its CSP nonce needs
  // (server/security-headers.ts): a page built ahead would carry no nonce and its scripts would not run.
  const theme = parseThemeChoice((await cookies()).get(THEME_COOKIE)?.value);
  return (
    <html lang="en" data-theme={theme === 'system' ? undefined : theme}>
      <body>
        <Providers>{children}</Providers>
        <ServiceWorker />
      </body>
    </html>
  );
}
