import { describe, expect, it } from 'vitest';
import { probeEnvironmentSource } from '../test-support/probe-environment';
import { seedTeam, trpc } from '../test-support/reliability/harness';
import { useTestServer } from '../test-support/test-server';

// Hostile environments saved through the API, five at once from five teams: each is stopped at
// its budget in the dry-run pool, every save is INVALID with the reason, and the server answers
// health all along (its event loop never runs their code).

const SLOW = probeEnvironmentSource('slow', `const until = Date.now() + 900; while (Date.now() < until) {}
    return { observation: 'x'.repeat(900000), reward: 0, terminated: ctx.state.n >= 1000 };`);

/** Each dry run's budget: a server that ran user code on its own loop would stall this long per save. */
const BUDGET_MS = 5_000;

describe('hostile dry runs through the API', () => {
  const ctx = useTestServer({ dryRuns: { budgetMs: BUDGET_MS, graceMs: 1_000 } });

  it('five slow, huge environments saved at once: all INVALID, and health answers throughout', async () => {
    const teams = await Promise.all(Array.from({ length: 5 }, () => seedTeam(ctx.t.db)));
    let slowest = 0;
    let answered = 0;
    let saving = true;
    // One request after another while the saves last (bounded): each waits on the answer before.
    const poll = (async () => {
      while (saving && answered < 5_000) {
        const started = performance.now();
        const res = await fetch(`${ctx.server.url}/api/health`);
        expect(res.status).toBe(200);
        slowest = Math.max(slowest, performance.now() - started);
        answered++;
      }
    })();
    const saves = await Promise.all(
      teams.map((team) =>
        trpc<{ validation: { ok: boolean; errors: Array<{ message: string }> } }>(ctx.server.url, team.apiKey, 'environments.saveVersion', {
          teamId: team.teamId, name: 'slow', entry: 'env.ts', files: { 'env.ts': SLOW },
          manifest: { name: 'slow', version: '1.0.0', kind: 'multi-turn', limits: { maxTurns: 1000, maxTokensPerTurn: 4, maxResponseTokens: 4000 } },
        }),
      ),
    );
    saving = false;
    await poll;
    for (const saved of saves) {
      expect(saved.validation.ok).toBe(false);
      expect(saved.validation.errors[0].message).toMatch(/^the dry run took too long: 0 of 8 episodes in 5 s/);
    }
    // Health kept answering while five saves waited on the pool (two processes at a time). This is
    // not a latency target (bench figures are for that): a server running user code on its loop
    // would hold one request for a whole dry run's budget, and no loaded machine comes near that.
    console.log(`[hostile-dry-runs] health answered ${answered} times, slowest ${slowest.toFixed(0)} ms`);
    expect(answered).toBeGreaterThan(10);
    expect(slowest).toBeLessThan(BUDGET_MS);
  });
});
