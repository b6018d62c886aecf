'use client';
import Link from 'next/link';
import { AppShell } from './_ui/shell';

export default function NotFound() {
  return (
    <AppShell narrow>
      <div className="empty-state">
        <h1>Page not found</h1>
        <p>There is nothing at this address.</p>
        <p>
          <Link href="/">Go to the start page</Link>
        </p>
      </div>
    </AppShell>
  );
}
