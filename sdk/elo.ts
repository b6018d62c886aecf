/**
 * Elo ratings with confidence intervals from a tournament's game results: the Bradley–Terry model
 * (P(i beats j) = 1 / (1 + 10^((r_j − r_i) / 400))) fitted by maximum likelihood, a draw counted
 * as half a win each. Every pair that met also gets one virtual draw (BayesElo's prior), so that a
 * player who won or lost every game gets a finite rating instead of ±∞. Intervals come from the
 * curvature of the likelihood at its maximum (the Fisher information), with the ratings' mean held
 * at `mean`: a rating's interval is how far it could move with the others given the games played.
 */

export interface PairResult {
  a: string;
  b: string;
  /** Games a won, b won, and drawn. */
  aWins: number;
  bWins: number;
  draws: number;
}

export interface Rating {
  player: string;
  elo: number;
  /** Half-width of the 95% interval, in Elo points (null with a single player). */
  ci95: number | null;
  games: number;
  /** Points scored: wins plus half the draws. */
  score: number;
}

const SCALE = 400 / Math.LN10;
/** One virtual draw per pair that met. */
const PRIOR_DRAWS = 1;

export function eloRatings(players: readonly string[], results: readonly PairResult[], mean = 1000): Rating[] {
  const n = players.length;
  const index = new Map(players.map((p, i) => [p, i]));
  // w[i][j]: points i scored against j (prior included); g[i][j]: games between them (prior included).
  const w = players.map(() => new Array<number>(n).fill(0));
  const g = players.map(() => new Array<number>(n).fill(0));
  const games = new Array<number>(n).fill(0);
  const score = new Array<number>(n).fill(0);
  for (const r of results) {
    const i = index.get(r.a);
    const j = index.get(r.b);
    if (i === undefined || j === undefined || i === j) continue;
    const played = r.aWins + r.bWins + r.draws;
    if (played === 0) continue;
    const first = g[i][j] === 0;
    const prior = first ? PRIOR_DRAWS : 0;
    w[i][j] += r.aWins + r.draws / 2 + prior / 2;
    w[j][i] += r.bWins + r.draws / 2 + prior / 2;
    g[i][j] += played + prior;
    g[j][i] += played + prior;
    games[i] += played;
    games[j] += played;
    score[i] += r.aWins + r.draws / 2;
    score[j] += r.bWins + r.draws / 2;
  }

  // Strengths γ by the MM iteration (Hunter 2004): γ_i ← W_i / Σ_j g_ij / (γ_i + γ_j).
  let gamma = new Array<number>(n).fill(1);
  for (let iteration = 0; iteration < 10_000; iteration++) {
    const next = gamma.map((gi, i) => {
      let won = 0;
      let denominator = 0;
      for (let j = 0; j < n; j++) {
        if (g[i][j] === 0) continue;
        won += w[i][j];
        denominator += g[i][j] / (gi + gamma[j]);
      }
      return denominator > 0 ? won / denominator : gi;
    });
    // Fix the scale: the geometric mean of the strengths is 1.
    const logMean = next.reduce((s, x) => s + Math.log(x), 0) / n;
    const normalised = next.map((x) => x / Math.exp(logMean));
    const moved = Math.max(...normalised.map((x, i) => Math.abs(Math.log(x) - Math.log(gamma[i]))));
    gamma = normalised;
    if (moved < 1e-12) break;
  }
  const theta = gamma.map((x) => Math.log(x));

  return players.map((player, i) => ({
    player,
    elo: mean + theta[i] * SCALE,
    ci95: n > 1 ? 1.96 * SCALE * Math.sqrt(centredVariance(theta, g)[i]) : null,
    games: games[i],
    score: score[i],
  }));
}

/**
 * Var(θ_i) with the ratings' mean held fixed: the pseudo-inverse of the Fisher information
 * (I_ij = −g_ij p_ij (1 − p_ij), I_ii = Σ_j g_ij p_ij (1 − p_ij)), whose null space is the common
 * shift. With J the all-ones matrix, I⁺ = (I + J/n)⁻¹ − J/n. A player who met nobody: infinite.
 */
function centredVariance(theta: number[], g: number[][]): number[] {
  const n = theta.length;
  const info = theta.map(() => new Array<number>(n).fill(0));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      if (i === j || g[i][j] === 0) continue;
      const p = 1 / (1 + Math.exp(theta[j] - theta[i]));
      const v = g[i][j] * p * (1 - p);
      info[i][j] -= v;
      info[i][i] += v;
    }
  }
  const isolated = info.map((row, i) => row[i] === 0);
  const m = info.map((row) => row.map((x) => x + 1 / n));
  const inverse = invert(m);
  return inverse ? inverse.map((row, i) => (isolated[i] ? Infinity : Math.max(0, row[i] - 1 / n))) : theta.map(() => Infinity);
}

/** Gauss–Jordan with partial pivoting; null when singular (players in separate groups that never met). */
function invert(a: number[][]): number[][] | null {
  const n = a.length;
  const m = a.map((row, i) => [...row, ...row.map((_, j) => (i === j ? 1 : 0))]);
  for (let c = 0; c < n; c++) {
    let pivot = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r][c]) > Math.abs(m[pivot][c])) pivot = r;
    if (Math.abs(m[pivot][c]) < 1e-12) return null;
    [m[c], m[pivot]] = [m[pivot], m[c]];
    const d = m[c][c];
    for (let k = 0; k < 2 * n; k++) m[c][k] /= d;
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = m[r][c];
      if (f !== 0) for (let k = 0; k < 2 * n; k++) m[r][k] -= f * m[c][k];
    }
  }
  return m.map((row) => row.slice(n));
}
