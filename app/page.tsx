'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { authClient } from './auth-client';
import { useTRPC } from './trpc';

function SystemStatus() {
  const trpc = useTRPC();
  const health = useQuery({ ...trpc.system.health.queryOptions(), refetchInterval: 10_000 });
  if (health.isPending) return <p className="muted">Checking…</p>;
  if (health.isError) return <p className="bad">The server does not answer: {health.error.message}</p>;
  const h = health.data;
  return (
    <dl className="facts" aria-label="System status">
      <dt>Status</dt>
      <dd className={h.status === 'ok' ? 'ok' : 'bad'}>{h.status}</dd>
      <dt>Database</dt>
      <dd>
        {h.database.reachable ? `reachable (${h.database.latencyMs} ms)` : 'unreachable'}
        {h.database.embedded ? ', embedded' : ''}
      </dd>
      <dt>Migrations</dt>
      <dd>
        {h.migrations.applied} applied{h.migrations.pending ? `, ${h.migrations.pending} pending` : ''}
      </dd>
      <dt>Workers online</dt>
      <dd>{h.workers.online}</dd>
      <dt>Version</dt>
      <dd>{h.version}</dd>
      <dt>Up for</dt>
      <dd>{formatDuration(h.uptimeSeconds)}</dd>
    </dl>
  );
}

function formatDuration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

function Environments({ teamId }: { teamId: string }) {
  const trpc = useTRPC();
  const envs = useQuery(trpc.environments.list.queryOptions({ teamId }));
  if (envs.isPending) return <p className="muted">Loading…</p>;
  if (envs.isError) return <p className="bad">{envs.error.message}</p>;
  if (envs.data.length === 0) return <p className="muted">No environments in this team yet.</p>;
  return (
    <ul className="plain">
      {envs.data.map((env) => (
        <li key={env.id}>
          <strong>{env.name}</strong>
          {env.versions[0] ? <span className="muted"> · v{env.versions[0].version}</span> : null}
          {env.description ? <div className="muted">{env.description}</div> : null}
        </li>
      ))}
    </ul>
  );
}

export default function HomePage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const me = useQuery(trpc.account.me.queryOptions());
  const signOut = useMutation({
    mutationFn: () => authClient.signOut(),
    onSuccess: () => queryClient.invalidateQueries(),
  });
  const [chosenTeam, setChosenTeam] = useState<string | null>(null);
  const teams = me.data?.teams ?? [];
  const team = teams.find((t) => t.id === chosenTeam) ?? teams[0];

  return (
    <main className="shell">
      <header className="topbar">
        <span className="brand">Whetstone</span>
        {me.data ? (
          <span>
            {teams.length > 1 ? (
              <label>
                <span className="muted">Team </span>
                <select value={team?.id} onChange={(e) => setChosenTeam(e.target.value)}>
                  {teams.map((t) => (
                    <option key={t.id} value={t.id}>
                      {t.name}
                    </option>
                  ))}
                </select>{' '}
              </label>
            ) : null}
            <span className="muted">{me.data.user.email}</span>{' '}
            <button type="button" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
              Sign out
            </button>
          </span>
        ) : null}
      </header>

      <div className="grid">
        <section className="panel">
          <h2>System</h2>
          <SystemStatus />
        </section>

        <section className="panel">
          <h2>{team ? `${team.name} · environments` : 'Account'}</h2>
          {me.isPending ? (
            <p className="muted">Loading…</p>
          ) : me.data && team ? (
            <>
              <p className="muted">
                Signed in as {me.data.user.name}, {team.role.toLowerCase()} of {team.name}.
              </p>
              <Environments teamId={team.id} />
            </>
          ) : (
            <p>
              You are not signed in. On the machine running Whetstone, open the one-time sign-in link
              that <code>npm start</code> printed.
            </p>
          )}
        </section>
      </div>
    </main>
  );
}
