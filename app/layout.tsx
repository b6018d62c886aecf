import type { Metadata } from 'next';
import { cookies } from 'next/headers';
import type { ReactNode } from 'react';
import { Providers } from './providers';
import { parseThemeChoice, THEME_COOKIE } from './_ui/theme-choice';
import './globals.css';

export const metadata: Metadata = {
  title: 'Whetstone',
  description: 'A browser IDE for reinforcement learning of language-model agents',
  icons: { icon: '/favicon.svg' },
};

export default async function RootLayout({ children }: { children: ReactNode }) {
  // The user's theme choice (app/_ui/theme.tsx); "system" leaves it to prefers-color-scheme.
  const theme = parseThemeChoice((await cookies()).get(THEME_COOKIE)?.value);
  return (
    <html lang="en" data-theme={theme === 'system' ? undefined : theme}>
      <body>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
