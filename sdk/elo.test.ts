import { describe, expect, it } from 'vitest';
import { eloRatings } from './elo';

describe('eloRatings', () => {
  it('two players, 3 of 4 won: with the virtual draw, 3.5 of 5, so 400·log10(7/3) apart, ±166 each (by hand)', () => {
    const [a, b] = eloRatings(['a', 'b'], [{ a: 'a', b: 'b', aWins: 3, bWins: 1, draws: 0 }]);
    expect(a.elo - b.elo).toBeCloseTo(400 * Math.log10(7 / 3), 6); // 147.19
    expect((a.elo + b.elo) / 2).toBeCloseTo(1000, 9);
    // Var(θ_a) = 1 / (4 · 5 · 0.7 · 0.3) = 0.2381; 1.96 · (400 / ln 10) · √0.2381 = 166.1.
    expect(a.ci95).toBeCloseTo(1.96 * (400 / Math.LN10) * Math.sqrt(1 / (4 * 5 * 0.7 * 0.3)), 6);
    expect(a.ci95).toBeCloseTo(166.1, 1);
    expect(b.ci95).toBeCloseTo(a.ci95!, 9);
    expect(a).toMatchObject({ games: 4, score: 3 });
    expect(b).toMatchObject({ games: 4, score: 1 });
  });

  it('a clean sweep is finite; draws are half a point; more games narrow the interval', () => {
    const sweep = eloRatings(['a', 'b'], [{ a: 'a', b: 'b', aWins: 4, bWins: 0, draws: 0 }]);
    expect(Number.isFinite(sweep[0].elo)).toBe(true);
    expect(sweep[0].elo - sweep[1].elo).toBeCloseTo(400 * Math.log10(4.5 / 0.5), 6);
    const drawn = eloRatings(['a', 'b'], [{ a: 'a', b: 'b', aWins: 1, bWins: 1, draws: 2 }]);
    expect(drawn[0].elo).toBeCloseTo(1000, 9);
    expect(drawn[0].score).toBe(2);
    const many = eloRatings(['a', 'b'], [{ a: 'a', b: 'b', aWins: 30, bWins: 10, draws: 0 }]);
    expect(many[0].ci95!).toBeLessThan(eloRatings(['a', 'b'], [{ a: 'a', b: 'b', aWins: 3, bWins: 1, draws: 0 }])[0].ci95!);
  });

  it('three players in a chain: the order follows the results and the likelihood is at its maximum', () => {
    const results = [
      { a: 'x', b: 'y', aWins: 3, bWins: 1, draws: 0 },
      { a: 'y', b: 'z', aWins: 3, bWins: 1, draws: 0 },
      { a: 'x', b: 'z', aWins: 4, bWins: 0, draws: 0 },
    ];
    const r = eloRatings(['x', 'y', 'z'], results);
    expect(r[0].elo).toBeGreaterThan(r[1].elo);
    expect(r[1].elo).toBeGreaterThan(r[2].elo);
    // At the maximum, each player's expected points (prior included) equal the points scored.
    const p = (i: number, j: number) => 1 / (1 + 10 ** ((r[j].elo - r[i].elo) / 400));
    const expectedX = 5 * p(0, 1) + 5 * p(0, 2);
    expect(expectedX).toBeCloseTo(3 + 0.5 + 4 + 0.5, 6);
  });

  it('a player who met nobody has no finite interval; one player has none at all', () => {
    const r = eloRatings(['a', 'b', 'c'], [{ a: 'a', b: 'b', aWins: 1, bWins: 1, draws: 0 }]);
    expect(r[2].ci95).toBe(Infinity);
    expect(eloRatings(['solo'], [])[0]).toMatchObject({ elo: 1000, ci95: null, games: 0 });
  });
});
