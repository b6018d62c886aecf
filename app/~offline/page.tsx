import type { Metadata } from 'next';
import { ServerAddress, RetryWhenBack } from './retry';

// What the service worker (app/_pwa/sw.ts) shows when a page is asked for and the server does
// not answer: the installed app's window says so plainly instead of showing the browser's error.
// It asks the server for nothing but /api/health, so it works with the server down.

export const metadata: Metadata = { title: 'Server unreachable · Whetstone' };

export default function Offline() {
  return (
    <main id="main" className="content content-narrow">
      <div className="panel">
        <h1>The server is not answering</h1>
        <p>
          Whetstone&apos;s server at <ServerAddress /> is not answering. Start it with <code>npm start</code> in the
          Whetstone folder (or ask whoever runs it to), and check that this address is the one it printed.
        </p>
        <RetryWhenBack />
      </div>
    </main>
  );
}
