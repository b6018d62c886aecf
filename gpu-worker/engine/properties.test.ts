import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { prepareBatch, tokenRewards } from './batch';
import { gae, groupAdvantages } from './losses';
import { decodeSafetensors, encodeSafetensors } from './safetensors';
import { CharTokenizer } from './tokenizer';

describe('properties', () => {
  it('safetensors round-trips any F32 tensors and string metadata, and rejects any truncation', () => {
    const tensor = fc
      .array(fc.integer({ min: 1, max: 4 }), { minLength: 0, maxLength: 3 })
      .chain((shape) =>
        fc.record({
          shape: fc.constant(shape),
          data: fc.float32Array({ minLength: shape.reduce((a, b) => a * b, 1), maxLength: shape.reduce((a, b) => a * b, 1), noNaN: true }),
        }),
      );
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }).filter((k) => k !== '__metadata__'), tensor, { maxKeys: 4 }), fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 }), (tensors, meta) => {
        const buf = encodeSafetensors(new Map(Object.entries(tensors)), meta);
        const back = decodeSafetensors(buf);
        for (const [name, t] of Object.entries(tensors)) {
          expect(back.tensors.get(name)!.shape).toEqual(t.shape);
          expect(Array.from(back.tensors.get(name)!.data)).toEqual(Array.from(t.data));
        }
        for (const [k, v] of Object.entries(meta)) expect(back.metadata[k]).toBe(v);
        const dataBytes = Object.values(tensors).reduce((a, t) => a + t.data.length * 4, 0);
        if (dataBytes > 0) expect(() => decodeSafetensors(buf.subarray(0, buf.length - 1))).toThrow(/truncated|CRC/);
      }),
      { numRuns: 60 },
    );
  });

  it('the char tokenizer round-trips any text over its alphabet', () => {
    const tok = new CharTokenizer();
    fc.assert(
      fc.property(fc.stringMatching(/^[ -~\n\t]*$/), (s) => {
        expect(tok.decode(tok.encode(s))).toBe(s);
        expect(tok.encode(s)).toHaveLength(s.length);
      }),
    );
  });

  it('group advantages sum to zero within each group; Dr. GRPO keeps the raw differences', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: -5, max: 5 })), { minLength: 1, maxLength: 24 }), (rows) => {
        const groups = rows.map(([g]) => g);
        const returns = rows.map(([, r]) => r);
        for (const normalizeByStd of [true, false]) {
          const { advantages, zeroVariance } = groupAdvantages(returns, groups, { normalizeByStd, epsilon: 1e-6 });
          for (const g of new Set(groups)) {
            const idx = groups.map((x, i) => (x === g ? i : -1)).filter((i) => i >= 0);
            expect(Math.abs(idx.reduce((a, i) => a + advantages[i], 0))).toBeLessThan(1e-6 * idx.length + 1e-9);
            if (idx.every((i) => zeroVariance[i])) idx.forEach((i) => expect(advantages[i]).toBe(0));
            else if (!normalizeByStd) {
              const mean = idx.reduce((a, i) => a + returns[i], 0) / idx.length;
              idx.forEach((i) => expect(advantages[i]).toBeCloseTo(returns[i] - mean, 9));
            }
          }
        }
      }),
    );
  });

  it('GAE with γ = λ = 1 and zero values gives the return-to-go', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -3, max: 3 }), { minLength: 1, maxLength: 12 }), (rewards) => {
        const { advantages } = gae(rewards, rewards.map(() => 0), 0, 1, 1);
        advantages.forEach((a, t) => expect(a).toBe(rewards.slice(t).reduce((x, y) => x + y, 0)));
      }),
    );
  });

  it('prepared batches predict every trainable token exactly once, and final rewards land on the last one', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.tuple(fc.integer({ min: 4, max: 20 }), fc.boolean()), { minLength: 2, maxLength: 10 }), { minLength: 1, maxLength: 5 }),
        (rows) => {
          const batch = rows.map((r) => ({ tokens: r.map(([t]) => t), lossMask: r.map(([, m], i) => (i > 0 && m ? 1 : 0)), rewards: 1 }));
          const b = prepareBatch(batch, 0);
          batch.forEach((s, i) => {
            const predicted = b.mask.slice(i * b.cols, (i + 1) * b.cols).map((m, t) => (m ? b.targets[i * b.cols + t] : -1)).filter((x) => x >= 0);
            expect(predicted).toEqual(s.tokens.filter((_, j) => s.lossMask[j] === 1));
            const r = tokenRewards(s);
            expect(r.reduce((a, x) => a + x, 0)).toBe(s.lossMask.includes(1) ? 1 : 0);
          });
        },
      ),
    );
  });
});
