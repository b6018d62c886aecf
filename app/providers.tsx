'use client';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { useState, type ReactNode } from 'react';
import { transformer } from '../sdk/transformer';
import type { AppRouter } from '../server/api/root';
import { httpStatusOf } from './_ui/errors';
import { PaletteProvider } from './_ui/palette';
import { TRPCProvider } from './trpc';

export function Providers({ children }: { children: ReactNode }) {
  const [queryClient] = useState(
    () =>
      new QueryClient({
        defaultOptions: {
          queries: {
            staleTime: 5_000,
            // An answer such as "not found" or "sign in first" will not change on retry.
            retry: (failures, error) => {
              const status = httpStatusOf(error);
              return failures < 1 && !(status !== undefined && status >= 400 && status < 500);
            },
          },
        },
      }),
  );
  const [trpcClient] = useState(() =>
    createTRPCClient<AppRouter>({
      // A batch of queries goes as one GET; a run page asks for dozens of series at once, and a URL
      // past Node's 16 KiB header limit is refused (431). Past 8,000 characters a batch is split.
      links: [httpBatchLink({ url: '/api/trpc', transformer, maxURLLength: 8_000 })],
    }),
  );
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        <PaletteProvider>{children}</PaletteProvider>
      </TRPCProvider>
    </QueryClientProvider>
  );
}
