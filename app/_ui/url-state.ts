'use client';
import { usePathname, useRouter, useSearchParams } from 'next/navigation';
import { useCallback, useEffect, useRef } from 'react';

/**
 * The page's state in its URL (shared/UI.md: a link reproduces what the sender saw). `set`
 * changes some parameters and keeps the others; a null or empty value removes one. Choices the
 * user makes (a filter, a page, a tab) push a history entry so Back undoes them; typing replaces.
 */
export function useUrlState() {
  const params = useSearchParams();
  const pathname = usePathname();
  const router = useRouter();
  // The URL asked for and not yet rendered: a second change made before the router has moved
  // (two filters chosen in quick succession) builds on it rather than on the URL of the last render,
  // which would undo the first.
  const pending = useRef<string | null>(null);
  useEffect(() => {
    pending.current = null;
  }, [params]);
  const set = useCallback(
    (changes: Record<string, string | number | null>, opts: { replace?: boolean } = {}) => {
      const next = new URLSearchParams(pending.current ?? params.toString());
      for (const [key, value] of Object.entries(changes)) {
        if (value === null || value === '') next.delete(key);
        else next.set(key, String(value));
      }
      const query = next.toString();
      pending.current = query;
      const href = `${pathname}${query ? `?${query}` : ''}`;
      if (opts.replace) router.replace(href, { scroll: false });
      else router.push(href, { scroll: false });
    },
    [params, pathname, router],
  );
  return { params, set };
}

/** A whole number from the URL at least `min` (a page, a version), or `fallback`. */
export function intParam(value: string | null, fallback: number, min = 1): number {
  const n = Number(value);
  return Number.isInteger(n) && n >= min ? n : fallback;
}
