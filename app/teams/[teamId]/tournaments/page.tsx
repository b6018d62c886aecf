'use client';
import { useMutation, useQuery } from '@tanstack/react-query';
import { Trophy } from 'lucide-react';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import type { DryRunReport } from '../../../../sdk/dry-run-report';
import { ErrorNote, Field, Loading, PageTitle } from '../../../_ui/components';
import { DataTable, type Column } from '../../../_ui/data-table';
import { EmptyState } from '../../../_ui/empty-state';
import { formatDateTime, formatRelative } from '../../../_ui/format';
import { useTeam } from '../../../_ui/team-context';
import { useTRPC } from '../../../trpc';

type Summary = { id: string; environment: { name: string; version: number } | null; pairings: number; finished: number; games: number; createdAt: Date };

const columns = (base: string): Column<Summary>[] => [
  {
    header: 'Tournament',
    rowHeader: true,
    cell: (t) => (
      <Link href={`${base}/tournaments/${t.id}`} className="id-link">
        {t.environment ? `${t.environment.name} v${t.environment.version}` : 'tournament'} · {t.id.slice(0, 8)}
      </Link>
    ),
  },
  { header: 'Pairings done', num: true, cell: (t) => `${t.finished} of ${t.pairings}` },
  { header: 'Games', num: true, cell: (t) => t.games },
  { header: 'Created', className: 'nowrap muted small', title: (t) => formatDateTime(t.createdAt), cell: (t) => formatRelative(t.createdAt) },
];

/**
 * Checkpoint tournaments: the team's past ones, and a form for a new one (a two-player game's
 * version, its checkpoints and bots, games a pairing). Each pairing runs as an evaluation job.
 */
export default function TournamentsPage() {
  const team = useTeam();
  const trpc = useTRPC();
  const base = `/teams/${team.id}`;
  const list = useQuery({ ...trpc.tournaments.list.queryOptions({ teamId: team.id }), refetchInterval: 5000 });
  return (
    <>
      <PageTitle title="Tournaments" />
      <p className="muted lead">Checkpoints and bots of a two-player game play each other, seats alternated; the table rates them by Elo with 95% intervals as games finish.</p>
      <NewTournament />
      <h2 className="section-title">Past tournaments</h2>
      {list.error ? <ErrorNote error={list.error} /> : null}
      {list.isPending ? (
        <Loading label="Loading tournaments…" />
      ) : (
        <DataTable
          label="Tournaments"
          columns={columns(base)}
          rows={list.data ?? []}
          rowKey={(t) => t.id}
          empty={<EmptyState title="No tournaments yet">Pick a game and its checkpoints above: each pair plays as an evaluation on the team’s workers.</EmptyState>}
        />
      )}
    </>
  );
}

function NewTournament() {
  const team = useTeam();
  const trpc = useTRPC();
  const router = useRouter();
  const envs = useQuery(trpc.environments.list.queryOptions({ teamId: team.id, includeArchived: false }));
  const [environmentId, setEnvironmentId] = useState('');
  const env = envs.data?.find((e) => e.id === environmentId) ?? null;
  const versionId = env?.versions[0]?.id ?? '';
  const version = useQuery({ ...trpc.environments.version.queryOptions({ teamId: team.id, versionId }), enabled: versionId !== '' });
  const checkpoints = useQuery({ ...trpc.runs.teamCheckpoints.queryOptions({ teamId: team.id, kind: 'SAMPLER', environmentId, offset: 0, limit: 100 }), enabled: environmentId !== '' });
  const [picked, setPicked] = useState<string[]>([]);
  const [games, setGames] = useState('10');
  const create = useMutation(trpc.tournaments.create.mutationOptions());

  const description = (version.data?.validation as Partial<DryRunReport> | null | undefined)?.description;
  const bots = description?.bots ?? [];
  const twoPlayer = description ? description.agents.length === 2 : null;
  const n = Number(games);
  const gamesOk = Number.isInteger(n) && n >= 1 && n <= 1000;
  const checkpointsPicked = picked.filter((p) => p.startsWith('checkpoint:')).length;
  const problem = !env
    ? 'Pick a game.'
    : twoPlayer === false
      ? `${env.name} is not a two-player game.`
      : picked.length < 2
        ? 'Pick at least two players.'
        : checkpointsPicked === 0
          ? 'Pick at least one checkpoint: bots do not play each other here.'
          : !gamesOk
            ? 'Games a pairing is a whole number from 1 to 1,000.'
            : null;
  const toggle = (key: string) => setPicked((p) => (p.includes(key) ? p.filter((x) => x !== key) : [...p, key]));
  const submit = () => {
    if (problem || !versionId) return;
    const players = picked.map((k) => (k.startsWith('checkpoint:') ? { checkpointId: k.slice('checkpoint:'.length) } : { bot: k.slice('bot:'.length) }));
    create.mutate({ teamId: team.id, environmentVersionId: versionId, players, gamesPerPair: n }, { onSuccess: (r) => router.push(`/teams/${team.id}/tournaments/${r.tournamentId}`) });
  };

  return (
    <form
      className="panel"
      aria-labelledby="new-tournament"
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <h2 id="new-tournament">
        New tournament
      </h2>
      <div className="form-grid">
        <Field label="Game" hint="A two-player environment; its newest version is played.">
          {(a) => (
            <select
              {...a}
              value={environmentId}
              onChange={(e) => {
                setEnvironmentId(e.target.value);
                setPicked([]);
              }}
            >
              <option value="">Choose…</option>
              {(envs.data ?? []).map((e) => (
                <option key={e.id} value={e.id}>
                  {e.name} v{e.versions[0]?.version ?? '–'}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Games a pairing" hint="Seats alternate: an even number gives each side as many.">
          {(a) => <input {...a} inputMode="numeric" value={games} onChange={(e) => setGames(e.target.value)} />}
        </Field>
      </div>
      {env ? (
        <fieldset className="tournament-players">
          <legend>Players</legend>
          {checkpoints.isPending || version.isPending ? <Loading label="Loading checkpoints and bots…" /> : null}
          {(checkpoints.data?.checkpoints ?? []).map((c) => (
            <label key={c.id} className="check">
              <input type="checkbox" checked={picked.includes(`checkpoint:${c.id}`)} onChange={() => toggle(`checkpoint:${c.id}`)} /> step {c.step} of run {c.job?.id ?? 'deleted'}{' '}
              <span className="muted small mono">{c.id.slice(0, 10)}</span>
            </label>
          ))}
          {checkpoints.data && checkpoints.data.checkpoints.length === 0 ? <p className="muted small">No sampler checkpoint of {env.name} yet: train a run first.</p> : null}
          {bots.map((b) => (
            <label key={b} className="check">
              <input type="checkbox" checked={picked.includes(`bot:${b}`)} onChange={() => toggle(`bot:${b}`)} /> {b} <span className="muted small">(bot)</span>
            </label>
          ))}
        </fieldset>
      ) : null}
      {create.error ? <ErrorNote error={create.error} /> : null}
      <div className="actions">
        <button type="submit" className="btn btn-primary" disabled={problem !== null || create.isPending}>
          <Trophy size={15} aria-hidden="true" /> Start tournament
        </button>
        {problem ? <span className="hint">{problem}</span> : <span className="hint">{(picked.length * (picked.length - 1)) / 2 - ((picked.length - checkpointsPicked) * (picked.length - checkpointsPicked - 1)) / 2} pairings of {n} games, as evaluation jobs.</span>}
      </div>
    </form>
  );
}
