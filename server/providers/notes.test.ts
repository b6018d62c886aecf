import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../test-support/test-database';
import { seedTeam } from '../test-support/reliability/harness';
import { providerNotes } from './notes';

// What a job waiting for capacity is told about its pool's cluster providers (notes.ts).
describe('provider notes', () => {
  it('name the workers starting and those pending in Slurm, with its reasons; the refusal while backing off', async () => {
    const t = await createTestDatabase();
    try {
      const team = await seedTeam(t.db);
      const provider = await t.db.clusterProvider.create({
        data: { teamId: team.teamId, name: 'hpc', kind: 'SLURM', settings: { maxWorkers: 4 }, tokenHash: `h-${Math.random()}`, prefix: 'wsp_x', createdById: team.userId },
      });
      const launch = async (state: 'PENDING' | 'RUNNING' | 'ENDED', reason: string | null) => {
        const token = await t.db.workerToken.create({ data: { teamId: team.teamId, name: 'launch', prefix: 'wst_x', tokenHash: `h-${Math.random()}`, createdById: team.userId } });
        await t.db.clusterLaunch.create({ data: { providerId: provider.id, state, reason, workerTokenId: token.id } });
      };
      expect((await providerNotes(t.db)).get(team.teamId)).toBe('waiting for Slurm (hpc): no launch under way');
      await launch('RUNNING', 'None');
      await launch('RUNNING', 'None');
      await launch('PENDING', 'Resources');
      await launch('ENDED', 'COMPLETED');
      expect((await providerNotes(t.db)).get(team.teamId)).toBe('waiting for Slurm (hpc): 2 workers starting, 1 worker pending (Resources)');
      const now = new Date();
      await t.db.clusterProvider.update({ where: { id: provider.id }, data: { lastError: 'sbatch: error: Invalid account', backoffUntil: new Date(now.getTime() + 60_000) } });
      expect((await providerNotes(t.db, now)).get(team.teamId)).toMatch(/^waiting for Slurm \(hpc\): launches stopped until \d\d:\d\d:\d\d UTC: sbatch: error: Invalid account$/);
      // The shared pool has none.
      expect((await providerNotes(t.db)).has(null)).toBe(false);
    } finally {
      await t.drop();
    }
  });
});
