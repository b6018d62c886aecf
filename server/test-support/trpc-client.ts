import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { transformer } from '../../sdk/transformer';
import type { AppRouter } from '../api/root';

/** A typed tRPC client signed in with a session cookie, as the browser calls the API (same origin). */
export function sessionClient(url: string, cookie: string) {
  return createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${url}/api/trpc`, transformer, headers: () => ({ cookie, origin: url }) })] });
}
