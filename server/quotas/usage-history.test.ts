import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedTeam, type Team } from '../test-support/reliability/harness';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { usageHistory } from './usage-history';

const HOUR = 3_600_000;

describe('a team’s device use over the last 24 hours', () => {
  let t: TestDatabase;
  let team: Team;
  let other: Team;

  beforeAll(async () => {
    t = await createTestDatabase();
    team = await seedTeam(t.db);
    other = await seedTeam(t.db);
  });
  afterAll(async () => {
    await t?.drop();
  });

  /** A finished attempt of a new job of the team's, holding `devices` devices from `from` to `to`. */
  async function attempt(of: Team, devices: number, from: number, to: number) {
    const job = await t.db.job.create({ data: { teamId: of.teamId, ownerId: of.userId, kind: 'TRAIN', state: 'SUCCEEDED', config: {} } });
    await t.db.jobAttempt.create({
      data: { jobId: job.id, number: 1, deviceIndexes: Array.from({ length: devices }, (_, i) => i), state: 'ENDED', leaseExpiresAt: new Date(to), startedAt: new Date(from), endedAt: new Date(to) },
    });
  }

  it('weighs each attempt’s devices by the time it held them in each hour, the team’s alone', async () => {
    // Hours counted from the database's clock, as the query counts them.
    const [{ hour }] = await t.db.$queryRaw<Array<{ hour: Date }>>`SELECT date_trunc('hour', now()) AS hour`;
    const h = hour.getTime();
    await attempt(team, 2, h - 2 * HOUR, h - HOUR);
    await attempt(team, 1, h - HOUR + HOUR / 2, h - HOUR + (3 * HOUR) / 4);
    await attempt(team, 4, h - 30 * HOUR, h - 29 * HOUR);
    await attempt(other, 3, h - 2 * HOUR, h - HOUR);

    const history = await usageHistory(t.db, team.teamId);
    expect(history).toHaveLength(24);
    // (Found by their start: the window moves on if an hour turns while the test runs.)
    const at = (start: number) => history.find((x) => x.hourStart.getTime() === start)?.devices;
    expect(at(h - 2 * HOUR)).toBe(2);
    expect(at(h - HOUR)).toBe(0.25);
    expect(history.filter((x) => ![h - 2 * HOUR, h - HOUR].includes(x.hourStart.getTime())).every((x) => x.devices === 0)).toBe(true);
    expect(history.map((x) => x.hourStart.getTime())).toEqual(history.map((_, i) => history[0].hourStart.getTime() + i * HOUR));
  });
});
