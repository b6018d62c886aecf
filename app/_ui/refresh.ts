import type { QueryClient, QueryKey } from '@tanstack/react-query';

/**
 * Refetches after a change. A plain invalidation would reuse a first fetch still in flight
 * (react-query only cancels a running fetch when the query already has data), and that fetch
 * may have been answered before the change: cancel it first, then fetch anew.
 */
export async function refetchAfterChange(queryClient: QueryClient, queryKey?: QueryKey): Promise<void> {
  await queryClient.cancelQueries(queryKey ? { queryKey } : {});
  await queryClient.invalidateQueries(queryKey ? { queryKey } : {});
}
