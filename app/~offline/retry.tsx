'use client';
import { useEffect, useState, useSyncExternalStore } from 'react';

/** How often the page asks whether the server is back. */
const RETRY_MS = 5_000;

const noSubscription = () => () => {};

/** The address this window was opened at (the server's, as far as this window knows). */
export function ServerAddress() {
  const origin = useSyncExternalStore(noSubscription, () => window.location.origin, () => null);
  return <code>{origin ?? 'this address'}</code>;
}

/** Asks the server's health endpoint every few seconds and reloads the page the user wanted once it answers. */
export function RetryWhenBack() {
  const [tries, setTries] = useState(0);
  useEffect(() => {
    let stopped = false;
    const timer = setInterval(() => {
      void fetch('/api/health', { cache: 'no-store' })
        .then((res) => {
          if (res.ok && !stopped) window.location.reload();
        })
        .catch(() => setTries((n) => n + 1));
    }, RETRY_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, []);
  return (
    <p className="muted" role="status">
      This page tries again every {RETRY_MS / 1000} seconds and opens the app when the server answers
      {tries > 0 ? ` (${tries} ${tries === 1 ? 'try' : 'tries'} so far)` : ''}.{' '}
      <button type="button" onClick={() => window.location.reload()}>
        Try now
      </button>
    </p>
  );
}
