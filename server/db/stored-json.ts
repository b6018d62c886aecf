import type { Prisma } from './generated/prisma/client';

/**
 * A value for a Json column that Prisma stores exactly as given. Prisma's client copies a write's
 * arguments key by key with plain assignment, so an own `"__proto__"` key in user data (an
 * environment's `info`, as JSON.parse gives it) becomes the copy's prototype and is not stored.
 * A value with `toJSON` is taken as it is instead, and marked `Raw` (the JSON protocol's tag for
 * a Json value) so that user keys such as `$type` are data too; JSON.stringify then writes every
 * own key. server/streams/user-json.test.ts shows such keys surviving the database and the API.
 */
export function storedJson(value: unknown): Prisma.InputJsonValue {
  return { toJSON: () => ({ $type: 'Raw', value }) } as unknown as Prisma.InputJsonValue;
}
