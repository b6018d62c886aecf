import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plan } from './plan';
import { byKind, planRound } from './plan-round';
import { arbLargeInput, S } from '../test-support/plan-arbitraries';
import type { PlanInput } from './types';

/** Random clusters whose sweeps run long: each job has up to 40 later copies. */
const arbLongQueues: fc.Arbitrary<PlanInput> = arbLargeInput.chain((input) =>
  fc.array(fc.integer({ min: 0, max: 40 }), { minLength: input.queued.length, maxLength: input.queued.length }).map((copies) => ({
    ...input,
    queued: input.queued.flatMap((job, i) => [job, ...Array.from({ length: copies[i] }, (_, c) => ({ ...job, id: `${job.id}-${c}`, queuedAt: job.queuedAt + (c + 1) * S }))]),
  })),
);

describe('a round plans only the jobs that decide it', () => {
  it('plans what the whole queue plans: the same placements and preemptions, and the same reasons for the jobs it reads', () => {
    let cut = 0;
    fc.assert(
      fc.property(arbLongQueues, (input) => {
        const round = planRound(input);
        if (round.read.length < input.queued.length) cut += 1;
        const whole = plan(input);
        expect(round.plan.placements).toEqual(whole.placements);
        expect(round.plan.preemptions).toEqual(whole.preemptions);
        const read = new Set(round.read.map((j) => j.id));
        expect(round.plan.waiting).toEqual(whole.waiting.filter((w) => read.has(w.jobId)));
        // Of each kind it read the jobs up to the first that waits, and no more.
        expect(round.read.length).toBe(read.size);
        const waits = new Map(whole.waiting.map((w) => [w.jobId, w.code]));
        for (const jobs of byKind(input)) {
          const taken = jobs.filter((j) => read.has(j.id));
          expect(jobs.slice(0, taken.length)).toEqual(taken);
          const stop = jobs.findIndex((j) => waits.has(j.id) && waits.get(j.id) !== 'PREEMPTING');
          expect(taken.length).toBe(stop === -1 ? jobs.length : stop + 1);
        }
      }),
      { numRuns: 1_500, seed: 2022 },
    );
    expect(cut).toBeGreaterThan(500);
  });

  it('groups the queue by kind, oldest first, whatever its order', () => {
    fc.assert(
      fc.property(arbLongQueues, fc.integer(), (input, seed) => {
        const shuffled = [...input.queued].sort((a, b) => ((a.id.length * 31 + seed) % 7) - ((b.id.length * 31 + seed) % 7));
        const kinds = byKind({ ...input, queued: shuffled });
        expect(kinds.reduce((n, k) => n + k.length, 0)).toBe(input.queued.length);
        for (const jobs of kinds) for (let i = 1; i < jobs.length; i += 1) expect(jobs[i - 1].queuedAt <= jobs[i].queuedAt).toBe(true);
      }),
      { numRuns: 200, seed: 2023 },
    );
  });
});
