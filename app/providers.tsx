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
      links: [httpBatchLink({ url: '/api/trpc', transformer })],
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
