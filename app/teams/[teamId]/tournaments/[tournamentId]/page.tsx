'use client';
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useParams } from 'next/navigation';
import { ErrorNote, Loading } from '../../../../_ui/components';
import { NotFound } from '../../../../_ui/empty-state';
import { isNotFound } from '../../../../_ui/errors';
import { formatDateTime } from '../../../../_ui/format';
import { RunStateBadge } from '../../../../_ui/runs/run-parts';
import { useTeam } from '../../../../_ui/team-context';
import { useTRPC } from '../../../../trpc';

const DONE = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

/**
 * One tournament: the Elo table (95% intervals; one virtual draw a pairing keeps a clean sweep
 * finite) and the cross-table of scores, each cell opening that pairing's games. It asks again
 * every few seconds while pairings are still playing.
 */
export default function TournamentPage() {
  const { tournamentId } = useParams<{ tournamentId: string }>();
  const team = useTeam();
  const trpc = useTRPC();
  const base = `/teams/${team.id}`;
  const table = useQuery({
    ...trpc.tournaments.get.queryOptions({ teamId: team.id, tournamentId }),
    retry: (n, e) => !isNotFound(e) && n < 2,
    refetchInterval: (q) => (q.state.data && q.state.data.pairings.every((p) => DONE.includes(p.state)) ? false : 3000),
  });
  if (table.error && isNotFound(table.error)) return <NotFound kind="tournament" id={tournamentId} teamName={team.name} back={{ href: `${base}/tournaments`, label: 'See the team’s tournaments' }} />;
  if (table.isLoadingError) return <ErrorNote error={table.error} />;
  if (!table.data) return <Loading label="Loading the tournament…" />;

  const t = table.data;
  const done = t.pairings.filter((p) => DONE.includes(p.state)).length;
  const played = t.pairings.reduce((s, p) => s + p.aWins + p.bWins + p.draws, 0);
  const label = (key: string) => t.players.find((p) => p.key === key)?.label ?? key;
  const pairing = (row: string, col: string) => t.pairings.find((p) => (p.a === row && p.b === col) || (p.a === col && p.b === row));

  return (
    <>
      <p className="breadcrumb">
        <Link href={`${base}/tournaments`}>Tournaments</Link> / {tournamentId.slice(0, 8)}
      </p>
      <header className="run-head">
        <div>
          <h1>Tournament {t.environment ? <span className="muted">· {t.environment.name} v{t.environment.version}</span> : null}</h1>
          <p className="run-head-line" role="status">
            {done} of {t.pairings.length} pairings done · {played} games played of {t.pairings.length * t.gamesPerPair} · started {formatDateTime(t.createdAt)}
          </p>
        </div>
      </header>

      <section className="panel" aria-labelledby="elo-title">
        <h2 id="elo-title">Elo</h2>
        <div className="table-wrap">
          <table className="table" aria-label="Elo table">
            <thead>
              <tr>
                <th scope="col" className="num">
                  #
                </th>
                <th scope="col">Player</th>
                <th scope="col" className="num">
                  Elo
                </th>
                <th scope="col" className="num">
                  95% interval
                </th>
                <th scope="col" className="num">
                  Score
                </th>
                <th scope="col" className="num">
                  Games
                </th>
              </tr>
            </thead>
            <tbody>
              {t.players.map((p, i) => (
                <tr key={p.key}>
                  <td className="num">{i + 1}</td>
                  <th scope="row">
                    {p.key.startsWith('checkpoint:') ? <Link href={`${base}/playground/${p.key.slice('checkpoint:'.length)}`}>{p.label}</Link> : p.label}
                  </th>
                  <td className="num tabular">
                    <strong>{Math.round(p.elo)}</strong>
                  </td>
                  <td className="num tabular muted">{p.ci95 === null ? '—' : Number.isFinite(p.ci95) ? `± ${Math.round(p.ci95)}` : 'no games yet'}</td>
                  <td className="num tabular">{p.score}</td>
                  <td className="num tabular">{p.games}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <p className="hint">Bradley–Terry ratings scaled to Elo, mean 1000; a draw is half a point, and each pairing counts one virtual draw so that a clean sweep stays finite.</p>
      </section>

      <section className="panel" aria-labelledby="cross-title">
        <h2 id="cross-title">Cross-table</h2>
        <div className="table-wrap">
          <table className="table cross-table" aria-label="Cross-table: the row player’s wins, losses and draws against the column player">
            <thead>
              <tr>
                <th scope="col">
                  <span className="sr-only">Player</span>
                </th>
                {t.players.map((p, i) => (
                  <th key={p.key} scope="col" className="num" title={p.label}>
                    <abbr title={p.label}>#{i + 1}</abbr>
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {t.players.map((row, r) => (
                <tr key={row.key}>
                  <th scope="row">
                    <span className="muted tabular">#{r + 1}</span> {label(row.key)}
                  </th>
                  {t.players.map((col) => {
                    if (row.key === col.key) return <td key={col.key} className="num muted" aria-label="itself">—</td>;
                    const p = pairing(row.key, col.key);
                    if (!p) return <td key={col.key} className="num muted">bots do not meet</td>;
                    const mine = p.a === row.key ? p.aWins : p.bWins;
                    const theirs = p.a === row.key ? p.bWins : p.aWins;
                    return (
                      <td key={col.key} className="num tabular">
                        <Link href={`${base}/runs/${p.jobId}?tab=matches`} aria-label={`${label(row.key)} against ${label(col.key)}: ${mine} won, ${theirs} lost, ${p.draws} drawn; open the games`}>
                          {mine}–{theirs}
                          {p.draws ? ` (${p.draws} drawn)` : ''}
                        </Link>
                        {!DONE.includes(p.state) ? (
                          <>
                            {' '}
                            <RunStateBadge state={p.state} />
                          </>
                        ) : null}
                        {p.errors ? <span className="cell-sub warn">{p.errors} errored</span> : null}
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </>
  );
}
