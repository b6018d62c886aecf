import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../db/embedded';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL server URL on which tests may create and drop their own databases. */
    pgServerUrl: string;
  }
}

/**
 * Integration tests use DATABASE_URL's server when set, else one embedded PostgreSQL for the
 * whole run. Each test file makes its own database on it (server/test-support/test-database.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.DATABASE_URL) {
    project.provide('pgServerUrl', process.env.DATABASE_URL);
    return async () => {};
  }
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-test-pg-'));
  fs.chmodSync(home, 0o755); // the postgres user must reach its data folder
  const pg = await startEmbeddedPostgres(home);
  project.provide('pgServerUrl', pg.url);
  return async () => {
    await pg.stop();
    fs.rmSync(home, { recursive: true, force: true });
  };
}
