import Link from 'next/link';
import type { TeamMatch } from '../../../server/runs/team-matches';
import { formatDateTime } from '../format';
import { Reason } from '../components';
import { formatMetric } from './run-parts';

/** What played a seat: the run's policy, a bot ("bot:scripted"), or a checkpoint's snapshot. */
export function policyWords(policy: string): string {
  if (policy.startsWith('snapshot:')) return `checkpoint ${policy.slice('snapshot:'.length)}`;
  if (policy.startsWith('checkpoint:')) return `checkpoint ${policy.slice('checkpoint:'.length)}`;
  if (policy === 'user') return 'a person, in the play console';
  if (policy.startsWith('bot:')) return `${policy.slice('bot:'.length)} bot`;
  return policy;
}

/** How a game ended, for a reader: the runner's end reasons (sdk/live.ts) in words. */
const END_WORDS: Record<string, string> = {
  terminated: 'game over',
  truncated: 'cut at the turn limit',
  context: 'cut: the context was full',
  error: 'ended by an error',
};

/**
 * Games as a table: the seats and what played each, who won and why, the returns, the length.
 * Names and reasons come from environment code: rendered as text.
 */
export function MatchesTable({ matches, base, showRun, label }: { matches: TeamMatch[]; base: string; showRun: boolean; label: string }) {
  return (
    <div className="table-wrap">
      <table className="table" aria-label={label}>
        <thead>
          <tr>
            {showRun ? <th scope="col">Run</th> : null}
            <th scope="col">Players</th>
            <th scope="col">Result</th>
            <th scope="col">Returns</th>
            <th scope="col" className="num">
              Moves
            </th>
            <th scope="col" className="num">
              Step
            </th>
            <th scope="col">Played</th>
          </tr>
        </thead>
        <tbody>
          {matches.map((m) => (
            <tr key={m.id}>
              {showRun ? (
                <th scope="row">
                  {m.job ? (
                    <Link href={`${base}/runs/${m.job.id}?tab=matches`} className="id-link">
                      {m.job.id}
                    </Link>
                  ) : (
                    <span className="muted">deleted run</span>
                  )}
                  {m.environment ? (
                    <span className="cell-sub">
                      {m.environment.name} v{m.environment.version}
                    </span>
                  ) : null}
                </th>
              ) : null}
              <td>
                <span className="players">
                  {m.players.map((p, i) => (
                    <span key={`${p.name}-${i}`} className="player">
                      {i > 0 ? <span className="vs"> vs </span> : null}
                      <span className={p.name === m.winner ? 'player-winner' : undefined}>{p.name}</span> <span className="muted small">({policyWords(p.policy)})</span>
                    </span>
                  ))}
                </span>
              </td>
              <td>
                {m.winner ? (
                  <>
                    <strong>{m.winner}</strong> won
                  </>
                ) : m.reason === 'terminated' ? (
                  'draw'
                ) : (
                  'no winner'
                )}
                {m.reason ? <span className="cell-sub">{END_WORDS[m.reason] ?? m.reason}</span> : null}
                {m.error ? <Reason text={m.error} tone="bad" /> : null}
              </td>
              <td className="small tabular">
                {Object.entries(m.rewards)
                  .map(([agent, r]) => `${agent} ${formatMetric(r)}`)
                  .join(' · ') || '—'}
              </td>
              <td className="num">
                <Link href={`${base}/matches/${m.id}`} aria-label={`Replay match ${m.id}, ${m.moves} moves`}>
                  {m.moves} · replay
                </Link>
              </td>
              <td className="num">{m.step ?? '—'}</td>
              <td className="nowrap muted small">{formatDateTime(m.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
