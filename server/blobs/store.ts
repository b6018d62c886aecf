import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Where large immutable things live (checkpoints, datasets): a key-value store of bytes. The
 * filesystem store is the default; an object store can stand behind the same interface.
 */
export interface BlobStore {
  /** Stores bytes under their sha256 and returns the key; storing the same bytes twice is free. */
  put(data: Buffer, prefix: string): Promise<{ key: string; bytes: number; sha256: string }>;
  get(key: string): Promise<Buffer>;
  has(key: string): Promise<boolean>;
}

const KEY = /^[a-z0-9-]+\/[0-9a-f]{64}$/;

export class FsBlobStore implements BlobStore {
  constructor(private readonly root: string) {}

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

  get(key: string): Promise<Buffer> {
    return fs.promises.readFile(this.file(key));
  }

  async has(key: string): Promise<boolean> {
    return fs.existsSync(this.file(key));
  }
}
