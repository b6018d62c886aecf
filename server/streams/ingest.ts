import type { StreamBatch } from '../../sdk/worker-protocol';
import type { Db } from '../db/client';
import type { Prisma } from '../db/generated/prisma/client';
import { foldIntoRollups, recomputeRollups, ROLLUP_STEPS } from './rollup';

// Stream batches from job runners, written idempotently: (job, attempt, seq) is recorded with the
// batch's rows in one transaction, so a batch that is sent again after a lost answer changes
// nothing. Metrics are unique per (job, key, step): a resumed attempt that replays steps after its
// last checkpoint overwrites them, so no step is ever counted twice.

/** What a batch became, for the live fan-out: rows with their ids, so clients can catch up by id. */
export type StoredBatch =
  | { kind: 'metrics'; items: Array<{ id: string; step: number; key: string; value: number }> }
  | { kind: 'rollouts'; items: Array<{ id: string; step: number; agent: string; index: number; reward: number }> }
  | { kind: 'logs'; items: Array<{ id: string; line: number; level: string; message: string; time: string }> }
  | { kind: 'matches'; items: Array<{ id: string; step: number | null; winner: string | null }> }
  | { kind: 'boards'; items: Array<{ step: number; game: number; text: string; move: number }> };

export async function ingestBatch(
  db: Db,
  job: { id: string; teamId: string },
  attempt: number,
  batch: StreamBatch,
): Promise<{ duplicate: boolean; stored: StoredBatch | null }> {
  // Live boards are not stored: they are a view of a game whose match is stored when it ends.
  if (batch.kind === 'boards') return { duplicate: false, stored: { kind: 'boards', items: batch.items } };
  return db.$transaction(async (tx) => {
    const claimed = await tx.$executeRaw`
      INSERT INTO "StreamBatch" ("jobId", attempt, seq, kind) VALUES (${job.id}, ${attempt}, ${batch.seq}, ${batch.kind})
      ON CONFLICT DO NOTHING`;
    if (claimed === 0) return { duplicate: true, stored: null };
    return { duplicate: false, stored: await writeItems(tx, job, attempt, batch) };
  });
}

async function writeItems(tx: Prisma.TransactionClient, job: { id: string; teamId: string }, attempt: number, batch: Exclude<StreamBatch, { kind: 'boards' }>): Promise<StoredBatch> {
  switch (batch.kind) {
    case 'metrics': {
      if (batch.items.length === 0) return { kind: 'metrics', items: [] };
      // One statement for the whole batch; the last value of a repeated (key, step) wins.
      const unique = [...new Map(batch.items.map((m) => [`${m.key}\u0000${m.step}`, m])).values()].filter((m) => Number.isFinite(m.value));
      if (unique.length === 0) return { kind: 'metrics', items: [] };
      // xmax = 0 marks a row this statement inserted rather than updated.
      const rows = await tx.$queryRaw<Array<{ id: bigint; step: number; key: string; value: number; inserted: boolean }>>`
        INSERT INTO "MetricPoint" ("jobId", key, step, value, attempt, time)
        SELECT ${job.id}, k, s, v, ${attempt}, now()
          FROM unnest(${unique.map((m) => m.key)}::text[], ${unique.map((m) => m.step)}::int[], ${unique.map((m) => m.value)}::float8[]) AS t(k, s, v)
        ON CONFLICT ("jobId", key, step) DO UPDATE SET value = EXCLUDED.value, attempt = EXCLUDED.attempt, time = EXCLUDED.time
        RETURNING id, step, key, value, (xmax = 0) AS inserted`;
      await foldIntoRollups(tx, job.id, rows.filter((r) => r.inserted));
      await recomputeRollups(tx, job.id, rows.filter((r) => !r.inserted).map((r) => ({ key: r.key, bucket: Math.floor(r.step / ROLLUP_STEPS) })));
      return { kind: 'metrics', items: rows.map(({ inserted: _inserted, ...r }) => ({ ...r, id: r.id.toString() })) };
    }
    case 'rollouts': {
      const items = [];
      for (const r of batch.items) {
        const data = {
          segments: r.segments as Prisma.InputJsonArray, reward: Number.isFinite(r.reward) ? r.reward : 0,
          turnRewards: r.turnRewards, endReason: r.endReason, info: r.info as Prisma.InputJsonObject, attempt,
        };
        const row = await tx.rolloutSample.upsert({
          where: { jobId_step_agent_index: { jobId: job.id, step: r.step, agent: r.agent, index: r.index } },
          update: data,
          create: { jobId: job.id, step: r.step, agent: r.agent, index: r.index, ...data },
          select: { id: true, step: true, agent: true, index: true, reward: true },
        });
        items.push({ ...row, id: row.id.toString() });
      }
      return { kind: 'rollouts', items };
    }
    case 'logs': {
      const items = [];
      for (const l of batch.items) {
        const row = await tx.logLine.create({
          data: { jobId: job.id, attempt, seq: batch.seq, line: l.line, level: l.level, message: l.message, time: l.time ? new Date(l.time) : new Date() },
        });
        items.push({ id: row.id.toString(), line: row.line, level: row.level, message: row.message, time: row.time.toISOString() });
      }
      return { kind: 'logs', items };
    }
    case 'matches': {
      const items = [];
      for (const m of batch.items) {
        const row = await tx.match.create({
          data: {
            teamId: job.teamId, jobId: job.id, step: m.step, agents: m.agents, moves: m.moves as Prisma.InputJsonArray,
            result: m.result as Prisma.InputJsonObject, winner: m.winner,
          },
        });
        items.push({ id: row.id, step: row.step, winner: row.winner });
      }
      return { kind: 'matches', items };
    }
  }
}
