/**
 * The tRPC transformer of every client and the server: superjson (dates, maps, bigints survive),
 * with user data's keys kept whatever they are. superjson refuses any object key named
 * `__proto__`, `constructor` or `prototype` (a prototype-pollution guard), so an environment's
 * `info: { constructor: … }` once made every read of its run a 500. Such keys are escaped on the
 * way out (a NUL prefix, which no ordinary key starts with; a key that does gets one more) and
 * restored on the way in as own data properties, never as prototypes. Objects without such keys
 * are passed through as they are.
 */
import superjson from 'superjson';
import { isPlainObject } from './user-json';

const MARK = '\u0000';
const RESERVED = new Set(['__proto__', 'constructor', 'prototype']);

/** A copy with `rename` applied to every key of plain objects, or the value itself when nothing changed. */
function mapKeys(value: unknown, rename: (key: string) => string): unknown {
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    value.forEach((item, i) => {
      const mapped = mapKeys(item, rename);
      if (mapped !== item) (out ??= value.slice())[i] = mapped;
    });
    return out ?? value;
  }
  if (!isPlainObject(value)) return value;
  let changed = false;
  const entries = Object.keys(value).map((key) => {
    const item = value[key];
    const name = rename(key);
    const mapped = mapKeys(item, rename);
    if (name !== key || mapped !== item) changed = true;
    return [name, mapped] as const;
  });
  if (!changed) return value;
  const out: Record<string, unknown> = {};
  // defineProperty: an own "__proto__" key stays a key and never sets the prototype.
  for (const [name, item] of entries) Object.defineProperty(out, name, { value: item, enumerable: true, writable: true, configurable: true });
  return out;
}

const escapeKey = (key: string) => (RESERVED.has(key) || key.startsWith(MARK) ? MARK + key : key);
const unescapeKey = (key: string) => (key.startsWith(MARK) ? key.slice(1) : key);

export const transformer = {
  serialize: (value: unknown) => superjson.serialize(mapKeys(value, escapeKey)),
  deserialize: (payload: unknown) => mapKeys(superjson.deserialize(payload as Parameters<typeof superjson.deserialize>[0]), unescapeKey),
};
