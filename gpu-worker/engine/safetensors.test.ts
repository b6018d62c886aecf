/** Reading the half-precision dtypes of Hugging Face checkpoints (the engine widens them to f32). */
import { describe, expect, it } from 'vitest';
import { decodeSafetensors } from './safetensors';

/** A safetensors buffer of one tensor with these raw 16-bit values. */
function file16(dtype: string, values: number[]): Buffer {
  const data = Buffer.alloc(values.length * 2);
  values.forEach((v, i) => data.writeUInt16LE(v, i * 2));
  const head = Buffer.from(JSON.stringify({ t: { dtype, shape: [values.length], data_offsets: [0, data.length] } }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(head.length));
  return Buffer.concat([len, head, data]);
}

describe('decodeSafetensors dtypes', () => {
  it('widens F16 exactly: normals, the largest, subnormals, zero signs, infinity, NaN', () => {
    const t = decodeSafetensors(file16('F16', [0x3c00, 0xc000, 0x3555, 0x7bff, 0x0001, 0x8000, 0x7c00, 0xfc00, 0x7e00])).tensors.get('t')!;
    expect([...t.data.slice(0, 8)]).toEqual([1, -2, Math.fround(0.333251953125), 65504, 2 ** -24, -0, Infinity, -Infinity]);
    expect(Number.isNaN(t.data[8])).toBe(true);
  });

  it('widens BF16 exactly (the top half of an f32)', () => {
    const t = decodeSafetensors(file16('BF16', [0x3f80, 0xc040, 0x3eab, 0x7f80, 0x0001])).tensors.get('t')!;
    expect([...t.data]).toEqual([1, -3, Math.fround(0.333984375), Infinity, 2 ** -133]);
  });

  it('refuses other dtypes, naming the tensor', () => {
    expect(() => decodeSafetensors(file16('I16', [1]), 'x.safetensors')).toThrow(/tensor "t" has dtype I16; only F32, F16 and BF16 are supported/);
  });
});
