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
      { numRuns: 500 },
    );
    // The property says something only if the window really cut queues.
    expect(cut).toBeGreaterThan(100);
  });
});
