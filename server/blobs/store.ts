import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Readable } from 'node:stream';

/**
 * Where large immutable things live (checkpoints, datasets): a key-value store of bytes. The
 * filesystem store is the default; an object store can stand behind the same interface.
 */
export interface BlobStore {
  /** Stores bytes under their sha256 and returns the key; storing the same bytes twice is free. */
  put(data: Buffer, prefix: string): Promise<{ key: string; bytes: number; sha256: string }>;
  /**
   * Stores a file's bytes under their sha256, hashing it as a stream (a model's weights never sit
   * in memory whole); the file is moved in, or removed when the store already has the bytes.
   */
  putFile(file: string, prefix: string): Promise<{ key: string; bytes: number; sha256: string }>;
  get(key: string): Promise<Buffer>;
  /** The bytes as a stream (for answers too large to hold). */
  stream(key: string): Readable;
  stat(key: string): Promise<{ size: number }>;
  has(key: string): Promise<boolean>;
  /** Deletes a blob (none there is no error). Only the collector calls it: see collect.ts for when a blob may go. */
  remove(key: string): Promise<void>;
  /** A folder on the same volume for uploads under way, so that `putFile` moves rather than copies. */
  readonly stagingRoot: string;
}

const KEY = /^[a-z0-9-]+\/[0-9a-f]{64}$/;

export class FsBlobStore implements BlobStore {
  readonly stagingRoot: string;

  constructor(private readonly root: string) {
    // Not a key's folder: keys are "<prefix>/<sha256>" with a prefix of [a-z0-9-].
    this.stagingRoot = path.join(root, '.staging');
  }

  private file(key: string): string {
    if (!KEY.test(key)) throw new Error(`not a blob key: ${key}`);
    return path.join(this.root, key);
  }

  async put(data: Buffer, prefix: string): Promise<{ key: string; bytes: number; sha256: string }> {
    if (!/^[a-z0-9-]+$/.test(prefix)) throw new Error(`bad blob prefix: ${prefix}`);
    const sha256 = createHash('sha256').update(data).digest('hex');
    const key = `${prefix}/${sha256}`;
    const target = this.file(key);
    if (!fs.existsSync(target)) {
      await fs.promises.mkdir(path.dirname(target), { recursive: true });
      // Write aside, then rename: a reader never sees half a blob, a crash leaves none.
      const temp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
      await fs.promises.writeFile(temp, data);
      await fs.promises.rename(temp, target);
    }
    return { key, bytes: data.length, sha256 };
  }

  async putFile(file: string, prefix: string): Promise<{ key: string; bytes: number; sha256: string }> {
    if (!/^[a-z0-9-]+$/.test(prefix)) throw new Error(`bad blob prefix: ${prefix}`);
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of fs.createReadStream(file)) {
      hash.update(chunk as Buffer);
      bytes += (chunk as Buffer).length;
    }
    const sha256 = hash.digest('hex');
    const key = `${prefix}/${sha256}`;
    const target = this.file(key);
    if (fs.existsSync(target)) await fs.promises.rm(file, { force: true });
    else {
      await fs.promises.mkdir(path.dirname(target), { recursive: true });
      await fs.promises.rename(file, target);
    }
    return { key, bytes, sha256 };
  }

  get(key: string): Promise<Buffer> {
    return fs.promises.readFile(this.file(key));
  }

  stream(key: string): Readable {
    return fs.createReadStream(this.file(key));
  }

  async stat(key: string): Promise<{ size: number }> {
    return { size: (await fs.promises.stat(this.file(key))).size };
  }

  async has(key: string): Promise<boolean> {
    return fs.existsSync(this.file(key));
  }

  async remove(key: string): Promise<void> {
    await fs.promises.rm(this.file(key), { force: true });
  }
}
