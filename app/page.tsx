'use client';
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useEffect } from 'react';
import { ErrorNote, Loading } from './_ui/components';
import { formatDuration } from './_ui/format';
import { lastTeam } from './_ui/last-team';
import { AppShell, useMe } from './_ui/shell';
import { useTRPC } from './trpc';

function SystemStatus() {
  const trpc = useTRPC();
  const health = useQuery({ ...trpc.system.health.queryOptions(), refetchInterval: 10_000 });
  if (health.isPending) return <Loading label="Checking…" />;
  if (health.isError) return <p className="bad">The server does not answer: {health.error.message}</p>;
  const h = health.data;
  return (
    <dl className="facts" aria-label="System status">
      <dt>Status</dt>
      <dd className={h.status === 'ok' ? 'ok' : 'bad'}>{h.status}</dd>
      <dt>Workers online</dt>
      <dd>{h.workers.online}</dd>
      <dt>Version</dt>
      <dd>{h.version}</dd>
      <dt>Up for</dt>
      <dd>{formatDuration(h.uptimeSeconds)}</dd>
    </dl>
  );
}

/** Signed in: opens the team last used in this browser (or the first). Signed out: the welcome. */
export default function HomePage() {
  const me = useMe();
  const router = useRouter();
  const teams = me.data?.teams;
  const target = teams && teams.length > 0 ? (teams.find((t) => t.id === lastTeam()) ?? teams[0]) : null;

  useEffect(() => {
    if (target) router.replace(`/teams/${target.id}`);
  }, [target, router]);

  if (me.isPending || target) {
    return (
      <AppShell>
        <Loading />
      </AppShell>
    );
  }
  if (me.isLoadingError) {
    return (
      <AppShell>
        <ErrorNote error={me.error} />
      </AppShell>
    );
  }
  if (me.data) {
    // Signed in but in no team (left or removed from all of them).
    return (
      <AppShell narrow>
        <div className="empty-state">
          <h1>You are not in any team</h1>
          <p>Create a team of your own, or ask an admin of an existing team for an invitation link.</p>
          <p>
            <Link href="/teams/new" className="btn btn-primary">
              Create a team
            </Link>
          </p>
        </div>
      </AppShell>
    );
  }
  return (
    <AppShell>
      <section className="hero">
        <h1>Whetstone</h1>
        <p className="lead">
          A browser IDE for reinforcement learning of language-model agents: write an environment and its reward, train
          with SFT, GRPO or PPO on your team’s shared GPU workers, and watch it learn.
        </p>
        <p className="hero-actions">
          <Link href="/sign-in" className="btn btn-primary">
            Sign in
          </Link>
          <Link href="/sign-up" className="btn">
            Create an account
          </Link>
        </p>
        <p className="muted small">
          You are not signed in. On the machine running Whetstone, the one-time link printed by <code>npm start</code>{' '}
          signs you in as the owner.
        </p>
      </section>
      <section className="panel narrow-panel" aria-labelledby="system-title">
        <h2 id="system-title">System</h2>
        <SystemStatus />
      </section>
    </AppShell>
  );
}
