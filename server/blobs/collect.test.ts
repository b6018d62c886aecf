/**
 * Collecting blobs no row names, on a real PostgreSQL: a blob shared by content stays while any
 * model, checkpoint or dataset version names it, and a collector and an import of the same bytes
 * never interleave so that the import's row names a file the collector removed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { collectBlobs, holdBlobKeys } from './collect';
import { FsBlobStore } from './store';

let t: TestDatabase;
let root: string;
let blobs: FsBlobStore;
let teamId: string;

beforeAll(async () => {
  t = await createTestDatabase();
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'blob-collect-'));
  blobs = new FsBlobStore(root);
  teamId = (await t.db.team.create({ data: { name: 'B', slug: 'b-blob-collect' } })).id;
});

afterAll(async () => {
  await t?.drop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

/** A model row whose one file is the key. */
function modelNaming(name: string, key: string) {
  return { teamId, name, family: 'qwen2', card: {}, files: [{ path: 'model.safetensors', storageKey: key, bytes: 1, sha256: key.split('/')[1] }], contentHash: key.split('/')[1], bytes: 1n };
}

/** Resolves once some session waits for an advisory lock (the other side of a race has reached it). */
async function someoneWaitsForALock(): Promise<void> {
  await vi.waitFor(
    async () => {
      const [{ waiting }] = await t.db.$queryRaw<{ waiting: bigint }[]>`SELECT count(*) AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`;
      if (waiting === 0n) throw new Error('nobody waits yet');
    },
    { timeout: 60_000, interval: 20 },
  );
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('collecting blobs', () => {
  it('keeps a blob while any model, checkpoint or dataset version names it', async () => {
    const { key } = await blobs.put(Buffer.from('shared weights'), 'model-files');
    const a = await t.db.pretrainedModel.create({ data: modelNaming('a', key) });
    const b = await t.db.pretrainedModel.create({ data: modelNaming('b', key) });
    await t.db.pretrainedModel.delete({ where: { id: a.id } });
    expect(await collectBlobs(t.db, blobs, [key])).toEqual([]);
    expect(await blobs.has(key)).toBe(true);
    await t.db.pretrainedModel.delete({ where: { id: b.id } });
    expect(await collectBlobs(t.db, blobs, [key, key])).toEqual([key]);
    expect(await blobs.has(key)).toBe(false);

    const checkpoint = await blobs.put(Buffer.from('checkpoint bytes'), 'checkpoints');
    await t.db.checkpoint.create({ data: { teamId, kind: 'SAMPLER', step: 1, storageKey: checkpoint.key, bytes: 1n, sha256: checkpoint.sha256 } });
    expect(await collectBlobs(t.db, blobs, [checkpoint.key])).toEqual([]);
    expect(await blobs.has(checkpoint.key)).toBe(true);
  });

  it('waits for an import holding the key, then keeps the file its row names', async () => {
    const { key } = await blobs.put(Buffer.from('imported twice'), 'model-files');
    const removed = await t.db.pretrainedModel.create({ data: modelNaming('removed', key) });
    await t.db.pretrainedModel.delete({ where: { id: removed.id } });
    // The import has found the file there (so stored nothing) and has not committed its row yet.
    const held = gate();
    const commit = gate();
    const importing = t.db.$transaction(async (tx) => {
      await holdBlobKeys(tx, [key]);
      held.open();
      await commit.opened;
      await tx.pretrainedModel.create({ data: modelNaming('imported', key) });
    });
    await held.opened;
    const collecting = collectBlobs(t.db, blobs, [key]);
    await someoneWaitsForALock();
    expect(await blobs.has(key)).toBe(true);
    commit.open();
    await importing;
    expect(await collecting).toEqual([]);
    expect(await blobs.has(key)).toBe(true);
  });

  it('an import that reaches the key while the collector removes it writes the file again', async () => {
    const data = Buffer.from('removed, then imported');
    const { key } = await blobs.put(data, 'model-files');
    const removing = gate();
    const remove = gate();
    // A store whose removal pauses, so that the import arrives while the collector holds the key.
    const paused = Object.assign(Object.create(blobs) as FsBlobStore, {
      remove: async (k: string) => {
        removing.open();
        await remove.opened;
        await blobs.remove(k);
      },
    });
    const collecting = collectBlobs(t.db, paused, [key]);
    await removing.opened;
    const importing = t.db.$transaction(async (tx) => {
      await holdBlobKeys(tx, [key]);
      // As putFile: the bytes are written unless the store has them.
      await blobs.put(data, 'model-files');
      await tx.pretrainedModel.create({ data: modelNaming('reimported', key) });
    });
    await someoneWaitsForALock();
    remove.open();
    expect(await collecting).toEqual([key]);
    await importing;
    expect((await blobs.get(key)).equals(data)).toBe(true);
  });
});
