import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTemplate } from '../../env-templates/load-template';
import { startHttpBandit } from '../../gpu-worker/test-support/http-bandit-server';
import { probeEnvironmentSource } from '../test-support/probe-environment';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { DryRunPool } from './dry-run-pool';
import { secretsKey } from '../secrets/secret-box';
import { setTeamSecret } from '../secrets/team-secrets';
import { saveEnvironmentVersion } from './save-version';

describe('saving environment versions', () => {
  let t: TestDatabase;
  let teamId: string;
  let userId: string;
  const dryRuns = new DryRunPool();
  beforeAll(async () => {
    t = await createTestDatabase();
    userId = (await t.db.user.create({ data: { email: 's@example.test', name: 'S' } })).id;
    teamId = (await t.db.team.create({ data: { name: 'T', slug: 't-save' } })).id;
  });
  afterAll(async () => {
    await dryRuns.close();
    await t?.drop();
  });

  it('stores a version once per content, dry-run validated, and reports errors at the user line', async () => {
    const bandit = loadTemplate('bandit');
    const input = { teamId, userId, name: 'my-bandit', entry: bandit.source.entry, files: bandit.source.files, manifest: bandit.manifest };
    const first = await saveEnvironmentVersion(t.db, dryRuns, input);
    expect(first).toMatchObject({ ok: true, version: 1, created: true, validation: { ok: true } });
    const again = await saveEnvironmentVersion(t.db, dryRuns, input);
    expect(again).toMatchObject({ ok: true, version: 1, created: false });
    if (!first.ok || !again.ok) throw new Error('unreachable');
    expect(again.versionId).toBe(first.versionId);

    const broken = { ...input, files: { ...input.files, [input.entry]: `${input.files[input.entry]}\nconst x: number = ;\n` } };
    const bad = await saveEnvironmentVersion(t.db, dryRuns, broken);
    if (!bad.ok) throw new Error('expected a saved, invalid version');
    expect(bad).toMatchObject({ version: 2, created: true, validation: { ok: false } });
    const line = broken.files[input.entry].split('\n').indexOf('const x: number = ;') + 1;
    expect(bad.validation!.compileErrors[0]).toMatchObject({ location: { file: input.entry, line, column: 19 } });
    const stored = await t.db.environmentVersion.findUniqueOrThrow({ where: { id: bad.versionId } });
    expect(stored.validationStatus).toBe('INVALID');

    expect(await saveEnvironmentVersion(t.db, dryRuns, { ...input, manifest: { ...bandit.manifest, kind: 'bogus' } })).toMatchObject({ ok: false, problems: [expect.stringMatching(/^manifest\.kind/)] });
    expect(await saveEnvironmentVersion(t.db, dryRuns, { ...input, entry: 'missing.ts' })).toMatchObject({ ok: false, problems: [expect.stringMatching(/missing\.ts is not one of the files/)] });
  });

  it('an HTTP environment is saved without code and dry-run against its live server; one that is down is saved invalid, naming its URL', async () => {
    const bandit = await startHttpBandit();
    try {
      const manifest = { name: 'http-bandit', version: '1.0.0', kind: 'single-turn', limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 2 }, server: { urls: [bandit.url] } };
      const input = { teamId, userId, name: 'http-bandit', entry: 'env.ts', files: { 'README.md': 'Served over HTTP.' }, manifest };
      const saved = await saveEnvironmentVersion(t.db, dryRuns, input);
      if (!saved.ok) throw new Error(saved.problems.join('; '));
      expect(saved.validation).toMatchObject({ ok: true, policy: 'random', description: { kind: 'single-turn', agents: ['agent'] }, tests: [], typeErrors: [] });
      expect(saved.validation!.transcripts[0].turns[0].observation).toMatch(/^colour: \w+\narm:$/);
      expect(bandit.calls.steps).toBeGreaterThan(0);
      expect(bandit.calls.finalized).toBe(bandit.calls.steps);

      const closed = await startHttpBandit();
      await closed.close();
      const gone = await saveEnvironmentVersion(t.db, dryRuns, { ...input, manifest: { ...manifest, server: { urls: [closed.url], retries: 0 } } });
      if (!gone.ok) throw new Error(gone.problems.join('; '));
      expect(gone.validation).toMatchObject({ ok: false, loadError: { message: expect.stringContaining(`${closed.url}/health is unavailable: cannot connect (ECONNREFUSED)`) } });
    } finally {
      await bandit.close();
    }
  });

  it("an HTTP environment's dry run sends the headers its manifest takes from team secrets; a missing secret leaves it invalid, naming the secret", async () => {
    const guarded = await startHttpBandit({ token: 'dry-run-token-42' });
    const key = secretsKey('save-version-test-installation-secret-0123');
    try {
      const server = { urls: [guarded.url], retries: 0, headers: { Authorization: { secret: 'GAME_TOKEN', prefix: 'Bearer ' } } };
      const manifest = { name: 'guarded', version: '1.0.0', kind: 'single-turn', limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 2 }, server };
      const input = { teamId, userId, name: 'guarded', entry: 'env.ts', files: { 'README.md': 'Behind a token.' }, manifest };
      const unset = await saveEnvironmentVersion(t.db, dryRuns, input, key);
      if (!unset.ok) throw new Error(unset.problems.join('; '));
      expect(unset.validation).toMatchObject({ ok: false, loadError: { message: expect.stringMatching(/the team secret GAME_TOKEN, which is not set: a team admin sets it under the team's Secrets/) } });
      expect(guarded.calls.resets).toBe(0);

      await setTeamSecret(t.db, key, { teamId, name: 'GAME_TOKEN', value: 'dry-run-token-42', userId });
      const saved = await saveEnvironmentVersion(t.db, dryRuns, { ...input, manifest: { ...manifest, version: '1.0.1' } }, key);
      if (!saved.ok) throw new Error(saved.problems.join('; '));
      expect(saved.validation).toMatchObject({ ok: true });
      expect([...guarded.calls.authorizations]).toEqual(['Bearer dry-run-token-42']);
      // Neither the stored manifest nor the stored report holds the value.
      const row = await t.db.environmentVersion.findUniqueOrThrow({ where: { id: saved.versionId } });
      expect(JSON.stringify(row)).not.toContain('dry-run-token-42');
    } finally {
      await guarded.close();
    }
  });

  /** An environment whose step runs `body` (a function body over action and ctx) and ends the episode after `turns` turns. */
  function environment(name: string, body: string, turns = 3) {
    const code = probeEnvironmentSource(name, `${body}
    return { observation: 'more', reward: 0, terminated: ctx.state.n >= ${turns} };`);
    const manifest = { name, version: '1.0.0', kind: 'multi-turn', limits: { maxTurns: turns, maxTokensPerTurn: 4, maxResponseTokens: 400 } };
    return { teamId, userId, name, entry: 'env.ts', files: { 'env.ts': code }, manifest };
  }

  it('an environment too slow for its budget is not valid, and the server never waits on its code', async () => {
    const pool = new DryRunPool({ budgetMs: 2_000, graceMs: 1_000 });
    try {
      // Each step just under the per-call deadline, 30 turns an episode: far past the budget.
      const slow = environment('slow', 'const until = Date.now() + 900; while (Date.now() < until) {}', 30);
      let worstLagMs = 0;
      let last = performance.now();
      const probe = setInterval(() => {
        const now = performance.now();
        worstLagMs = Math.max(worstLagMs, now - last - 20);
        last = now;
      }, 20);
      const saved = await saveEnvironmentVersion(t.db, pool, slow);
      clearInterval(probe);
      if (!saved.ok) throw new Error('expected a saved, invalid version');
      expect(saved.validation).toMatchObject({ ok: false, episodes: 0, errors: [{ kind: 'timeout', message: expect.stringMatching(/^the dry run took too long: 0 of 8 episodes in 2 s/) }] });
      expect(await t.db.environmentVersion.findUniqueOrThrow({ where: { id: saved.versionId } })).toMatchObject({ validationStatus: 'INVALID' });
      // The user's loop ran in the pool's process: this one kept its timers. Not a latency figure:
      // the in-process dry run blocked for its whole budget, and only that is ruled out here.
      expect(worstLagMs).toBeLessThan(2_000);
      // The stopped process was replaced: the next dry run plays normally (with a budget a loaded
      // machine cannot miss: this checks the replacement, not the speed).
      const fine = environment('fine', '');
      const report = await pool.run(fine.teamId, { source: { files: fine.files, entry: fine.entry }, manifest: { kind: 'multi-turn', agents: ['agent'], limits: fine.manifest.limits }, episodes: 8 }, { budgetMs: 120_000 });
      expect(report).toMatchObject({ ok: true, episodes: 8 });
    } finally {
      await pool.close();
    }
  });

  it("a team's saves wait for each other, and the report says behind how many", async () => {
    const pool = new DryRunPool({ processes: 2, perTeam: 1 });
    // Which save reaches the pool first is not this test's business (each writes to the database
    // before it asks): the pool's calls are recorded in the order they come, and the first is held
    // until the second has come, so that both wait in the pool together.
    const arrived: string[] = [];
    let bothArrived!: () => void;
    const together = new Promise<void>((resolve) => (bothArrived = resolve));
    const run = pool.run.bind(pool);
    pool.run = async (...args: Parameters<DryRunPool['run']>) => {
      arrived.push(Object.values(args[1].source.files).join('').match(/name: '(queued-\w)'/)![1]);
      if (arrived.length === 2) bothArrived();
      await together;
      return run(...args);
    };
    try {
      // Each run takes a while (a busy step), whichever goes first.
      const slow = 'const until = Date.now() + 50; while (Date.now() < until) {}';
      const saves = { 'queued-a': saveEnvironmentVersion(t.db, pool, environment('queued-a', slow)), 'queued-b': saveEnvironmentVersion(t.db, pool, environment('queued-b', slow)) };
      await Promise.all(Object.values(saves));
      expect([...arrived].sort()).toEqual(['queued-a', 'queued-b']);
      const [first, second] = await Promise.all(arrived.map((name) => saves[name as keyof typeof saves]));
      if (!first.ok || !second.ok) throw new Error('expected saved versions');
      // One at a time, in the order the pool got them: the second waited for the whole of the first.
      expect(first.validation?.queue).toMatchObject({ ahead: 0 });
      expect(second.validation?.queue?.ahead).toBe(1);
      expect(second.validation?.queue?.waitedMs).toBeGreaterThan(0);
    } finally {
      await pool.close();
    }
  });

  it('a report past its size is sent without transcripts; observations are cut', async () => {
    const huge = environment('huge', "if (ctx.state.n === 1) return { observation: 'x'.repeat(900_000), reward: 0, terminated: false };", 3);
    const saved = await saveEnvironmentVersion(t.db, dryRuns, huge);
    if (!saved.ok) throw new Error('expected a saved version');
    expect(JSON.stringify(saved.validation).length).toBeLessThan(300_000);
  });
});
