import { describe, expect, test } from 'vitest';
import { transformer } from './transformer';

const roundTrip = (value: unknown) => transformer.deserialize(JSON.parse(JSON.stringify(transformer.serialize(value))));

describe('transformer', () => {
  test('user data with __proto__, constructor and prototype keys round-trips as data', () => {
    const info = JSON.parse('{"__proto__": {"polluted": 1}, "constructor": {"prototype": {"x": 2}}, "\\u0000odd": 3, "n": [ {"prototype": 4} ]}');
    const back = roundTrip({ when: new Date(5), info }) as { when: Date; info: Record<string, unknown> };
    expect(back.when).toEqual(new Date(5));
    expect(Object.keys(back.info)).toEqual(['__proto__', 'constructor', '\u0000odd', 'n']);
    expect(Object.getOwnPropertyDescriptor(back.info, '__proto__')?.value).toEqual({ polluted: 1 });
    expect(Object.getPrototypeOf(back.info)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.stringify(back.info)).toBe(JSON.stringify(info));
  });

  test('objects without such keys pass through untouched', () => {
    const plain = { a: [{ b: 1 }], c: 'd' };
    expect(transformer.serialize(plain)).toEqual({ json: plain });
  });
});
