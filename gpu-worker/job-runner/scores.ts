/**
 * An evaluation's figures from its episodes, for eval jobs and the evaluation a training run makes
 * every `evalEvery` steps alike: single-agent environments by return (95% interval) and success (a
 * positive return, Wilson 95% interval); multi-agent ones by wins, draws and losses of the
 * evaluated seat, the win rate with its Wilson interval, and per seat. Both: the mean episode
 * length in moves (every player's), and where the environment names each turn's legal actions, the
 * share of the evaluated policy's moves that were legal.
 */
import { type CatalogueKey, seatWinRateKey } from '../../sdk/live';
import { type EpisodeRollout } from '../runtime/rollout';
import { type MetricValues } from './step-metrics';

/** The Wilson score interval (95%) of `successes` out of `n`: [0, 0] for no trials. */
export function wilson(successes: number, n: number, z = 1.96): [number, number] {
  if (n === 0) return [0, 0];
  const p = successes / n;
  const centre = (p + (z * z) / (2 * n)) / (1 + (z * z) / n);
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / (1 + (z * z) / n);
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

export interface Scores {
  metrics: MetricValues;
  /** Episodes scored (errors left out) and those that errored. */
  games: number;
  errors: number;
  /** One line for the log. */
  summary: string;
}

/** `seats[k]` is the agent the evaluated policy played in `rollouts[k]`. */
export function scoreEpisodes(rollouts: readonly EpisodeRollout[], seats: readonly string[], multiAgent: boolean, opts: { tools?: boolean } = {}): Scores {
  const count = (ks: number[]) => {
    const returns = ks.filter((k) => rollouts[k].endReason !== 'error').map((k) => rollouts[k].agents[seats[k]].totalReward);
    return {
      returns,
      errors: ks.length - returns.length,
      wins: returns.filter((r) => r > 0).length,
      losses: returns.filter((r) => r < 0).length,
      draws: returns.filter((r) => r === 0).length,
    };
  };
  const all = count(rollouts.map((_, k) => k));
  const n = all.returns.length;
  const mean = n === 0 ? 0 : all.returns.reduce((a, b) => a + b, 0) / n;
  const spread = n > 1 ? Math.sqrt(all.returns.reduce((acc, x) => acc + (x - mean) ** 2, 0) / (n - 1)) : 0;
  const half = n > 0 ? (1.96 * spread) / Math.sqrt(n) : 0;
  const rate = n === 0 ? 0 : all.wins / n;
  const [low, high] = wilson(all.wins, n);
  const scored = rollouts.flatMap((r, k) => (r.endReason === 'error' ? [] : [{ r, seat: seats[k] }]));
  const judged = scored.flatMap(({ r, seat }) => r.moves.filter((m) => m.agent === seat && !m.byBot && m.legal !== null));
  const meanLength = scored.length === 0 ? 0 : scored.reduce((a, { r }) => a + r.moves.length, 0) / scored.length;
  const legalRate = judged.length === 0 ? null : judged.filter((m) => m.legal).length / judged.length;
  // With tools: the share of episodes in which the policy made a call that ran.
  const toolUse = !opts.tools || scored.length === 0 ? null : scored.filter(({ r, seat }) => r.moves.some((m) => m.agent === seat && !m.byBot && m.tool?.ok)).length / scored.length;
  const common = {
    'eval/score': multiAgent ? rate : mean,
    'eval/mean_length': meanLength,
    ...(legalRate === null ? {} : { 'eval/legal_move_rate': legalRate }),
    ...(toolUse === null ? {} : { 'eval/tool_use_rate': toolUse }),
    'eval/games': n,
    'eval/errors': all.errors,
    'eval/mean_return': mean,
    'eval/mean_return_low': mean - half,
    'eval/mean_return_high': mean + half,
  } satisfies Partial<Record<CatalogueKey, number>>;
  const f = (x: number) => x.toFixed(3);
  const shape = `, mean length ${meanLength.toFixed(1)} moves${legalRate === null ? '' : `, legal moves ${f(legalRate)}`}${toolUse === null ? '' : `, tool use ${f(toolUse)}`}`;
  if (!multiAgent) {
    return {
      metrics: { ...common, 'eval/success_rate': rate, 'eval/success_rate_low': low, 'eval/success_rate_high': high } satisfies Partial<Record<CatalogueKey, number>>,
      games: n,
      errors: all.errors,
      summary: `mean return ${f(mean)} (95% ${f(mean - half)}–${f(mean + half)}), success ${f(rate)} (95% ${f(low)}–${f(high)}) over ${n} episodes (${all.errors} errors)${shape}`,
    };
  }
  const metrics: MetricValues = {
    ...common,
    'eval/wins': all.wins,
    'eval/losses': all.losses,
    'eval/draws': all.draws,
    'eval/win_rate': rate,
    'eval/win_rate_low': low,
    'eval/win_rate_high': high,
    'eval/draw_rate': n === 0 ? 0 : all.draws / n,
    'eval/loss_rate': n === 0 ? 0 : all.losses / n,
  } satisfies Partial<Record<CatalogueKey, number>>;
  for (const seat of new Set(seats)) {
    const s = count(seats.flatMap((x, k) => (x === seat ? [k] : [])));
    metrics[seatWinRateKey(seat)] = s.returns.length === 0 ? 0 : s.wins / s.returns.length;
  }
  const rest = `draws ${f(n === 0 ? 0 : all.draws / n)}, losses ${f(n === 0 ? 0 : all.losses / n)}`;
  return { metrics, games: n, errors: all.errors, summary: `win rate ${f(rate)} (95% ${f(low)}–${f(high)}), ${rest} over ${n} games (${all.errors} errors)${shape}` };
}
