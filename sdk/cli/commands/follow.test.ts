/** How `whetstone run --watch` reports a job's end: its checkpoints, with whose policy each is where learners learn independently. */
import { describe, expect, test } from 'vitest';
import { printer } from '../io';
import type { CommandContext } from './context';
import { printOutcome, type JobOutcome } from './follow';
import { EXIT } from '../errors';

function printed(checkpoints: JobOutcome['checkpoints']): string {
  let text = '';
  const io = { stdout: { write: (t: string) => (text += t) }, stderr: { write: () => true }, env: {}, cwd: '/', isTTY: false };
  const ctx = { io, out: printer(io, false), globals: { json: false }, connect: () => Promise.reject(new Error('offline')) } satisfies CommandContext;
  const job = { id: 'j1', kind: 'TRAIN', state: 'SUCCEEDED', startedAt: null, finishedAt: null, failureReason: null } as unknown as JobOutcome['job'];
  printOutcome(ctx, { job, metrics: {}, lastStep: 0, checkpoints, exitCode: EXIT.OK }, []);
  return text;
}

const at = new Date(0);

describe('a job’s checkpoints at its end', () => {
  test('one policy: no agent column', () => {
    expect(printed([{ id: 'c1', kind: 'SAMPLER', step: 3, agent: '', bytes: 1024n, createdAt: at }])).toMatch(/checkpoints:\n\s+ID\s+KIND\s+STEP\s+SIZE\n\s+c1\s+sampler\s+3\s/);
  });

  test('independent learners: each checkpoint names its agent', () => {
    const text = printed([
      { id: 'c2', kind: 'SAMPLER', step: 3, agent: 'black', bytes: 1024n, createdAt: at },
      { id: 'c1', kind: 'SAMPLER', step: 3, agent: 'white', bytes: 1024n, createdAt: at },
    ]);
    expect(text).toMatch(/ID\s+KIND\s+STEP\s+AGENT\s+SIZE\n\s+c2\s+sampler\s+3\s+black\s.*\n\s+c1\s+sampler\s+3\s+white\s/);
  });
});
