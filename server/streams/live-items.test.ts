import { describe, expect, it } from 'vitest';
import { liveBatchSchema, type StreamItem, type StreamKind } from '../../sdk/live';
import { streamBatchSchema } from '../../sdk/worker-protocol';
import { liveItems } from './ingest';

// What ingest publishes of each kind of stream batch is a live batch as sdk/live.ts declares it,
// whatever the runner left to the defaults.

const fence = { attemptId: 'a', fencingToken: '1', seq: 0 };

/** A batch as a runner writes it (sdk/live.ts's item types), through the wire's schema. */
const wire = <K extends StreamKind>(kind: K, items: StreamItem<K>[]) => streamBatchSchema.parse(JSON.parse(JSON.stringify({ ...fence, kind, items })));

const runnerBatches = [
  wire('metrics', [{ step: 0, key: 'reward/mean', value: 0.25 }, { step: 0, key: 'reward/mean', value: 0.5 }, { step: 1, key: 'env/valid', value: 1 }]),
  wire('rollouts', [{ step: 0, index: 0, segments: [{ text: 'A', trainable: true, role: 'assistant' }], reward: 1 }]),
  wire('logs', [{ line: 0, message: 'hello' }, { line: 1, level: 'warn', message: 'careful', time: '2026-01-01T00:00:00.000Z' }]),
  wire('matches', [{ step: null, agents: [{ name: 'black', policy: 'policy' }], moves: [{ index: 0 }], result: {}, winner: null }]),
  wire('boards', [{ step: 0, game: 0, text: '. x .', move: 0 }]),
];

describe('ingest: live items', () => {
  it('of every kind make a live batch of the contract, nothing dropped or added by the parse', () => {
    expect(new Set(runnerBatches.map((b) => b.kind)).size).toBe(5);
    for (const batch of runnerBatches) {
      const live = { jobId: 'j', attempt: 1, seq: batch.seq, stored: -1, ...liveItems(batch) };
      expect(liveBatchSchema.parse(JSON.parse(JSON.stringify(live))), batch.kind).toEqual(live);
    }
  });

  it('keep the last value of a (key, step), the agent default and a time for every log line', () => {
    const [metrics, rollouts, logs] = runnerBatches.map(liveItems);
    expect(metrics.items).toEqual([{ key: 'reward/mean', step: 0, value: 0.5 }, { key: 'env/valid', step: 1, value: 1 }]);
    expect(rollouts.items).toEqual([{ step: 0, agent: 'agent', index: 0, reward: 1 }]);
    expect(logs.kind === 'logs' && logs.items.map((l) => [l.level, Number.isNaN(Date.parse(l.time))])).toEqual([['info', false], ['warn', false]]);
  });
});
