import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plan } from './plan';
import { arbInput, S } from '../test-support/plan-arbitraries';
import { kindOf, queueWindow, windowSize } from './queue-window';
import type { PlanInput } from './types';

/**
 * Random clusters whose queues hold many jobs of each kind: each generated job comes with up to
 * 30 later copies, so the window (devices + 1 per kind) cuts most queues.
 */
const arbLongQueues: fc.Arbitrary<PlanInput> = arbInput.chain((input) =>
  fc.array(fc.integer({ min: 0, max: 30 }), { minLength: input.queued.length, maxLength: input.queued.length }).map((copies) => ({
    ...input,
    queued: input.queued.flatMap((job, i) => [job, ...Array.from({ length: copies[i] }, (_, c) => ({ ...job, id: `${job.id}-${c}`, queuedAt: job.queuedAt + (c + 1) * S }))]),
  })),
);

describe('queue window', () => {
  it('keeps the first devices + 1 jobs of each kind, oldest first', () => {
    fc.assert(
      fc.property(arbLongQueues, (input) => {
        const window = queueWindow(input);
        const size = windowSize(input);
        const perKind = new Map<string, number>();
        for (const job of window.queued) {
          const kind = kindOf(job, input.now);
          perKind.set(kind, (perKind.get(kind) ?? 0) + 1);
        }
        for (const [kind, n] of perKind) {
          const all = input.queued.filter((j) => kindOf(j, input.now) === kind);
          expect(n).toBe(Math.min(size, all.length));
          const oldestLeftOut = Math.min(...all.filter((j) => !window.queued.includes(j)).map((j) => j.queuedAt));
          for (const j of window.queued.filter((w) => kindOf(w, input.now) === kind)) expect(j.queuedAt).toBeLessThanOrEqual(oldestLeftOut);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('plans exactly what the whole queue plans: the same placements, preemptions, and reasons for the jobs it reads', () => {
    let cut = 0;
    fc.assert(
      fc.property(arbLongQueues, (input) => {
        const window = queueWindow(input);
        if (window.queued.length < input.queued.length) cut++;
        const whole = plan(input);
        const windowed = plan(window);
        expect(windowed.placements).toEqual(whole.placements);
        expect(windowed.preemptions).toEqual(whole.preemptions);
        const read = new Set(window.queued.map((j) => j.id));
        expect(windowed.waiting).toEqual(whole.waiting.filter((w) => read.has(w.jobId)));
      }),
      // A fixed seed: a random one found the counterexample below (present since the window was
      // written, 87468b9 included), which failed CI at random. It is kept as its own case.
      { numRuns: 500, seed: 20261125 },
    );
    // The property says something only if the window really cut queues.
    expect(cut).toBeGreaterThan(100);
  });

  // Found 25 Nov 2026 by a random seed: a job past the window (q6-20) was planned after another
  // job of its team had taken quota, and reserved the team's quota where the earlier jobs of its
  // kind had reserved devices; the whole queue then named it as the job q1-0 waits behind, and in
  // other clusters held back a job that the window placed. The later jobs of a kind now wait as the
  // first of their kind that waits, reserving nothing (plan.ts, rule 5). Kept as its own case.
  it('a job past the window changes no reason of a job in it', () => {
    fc.assert(
      fc.property(arbLongQueues, (input) => {
        const window = queueWindow(input);
        const read = new Set(window.queued.map((j) => j.id));
        expect(plan(window).waiting).toEqual(plan(input).waiting.filter((w) => read.has(w.jobId)));
      }),
      { numRuns: 500, seed: -1422130209, path: '497:278:1:0:0:0:1:0:0:0', endOnFailure: true },
    );
  });

  // Found while fixing the case above (seed 11 of 10 000-run searches): q5-22, past the window,
  // reserved its team's quota after q3 had taken some, and the whole queue kept q9 behind it; the
  // window, not reading q5-22, backfilled q9.
  it('a job past the window holds back no job in it', () => {
    fc.assert(
      fc.property(arbLongQueues, (input) => {
        const window = queueWindow(input);
        expect(plan(window).placements).toEqual(plan(input).placements);
      }),
      { numRuns: 10_000, seed: 11, path: '5208:428:0:0:0:0:4:1:0:0', endOnFailure: true },
    );
  });
});
