import { startEmbeddedPostgres } from './embedded';
import { checkDatabaseReachable } from './reachable';

export interface OpenedDatabase {
  url: string;
  embedded: boolean;
  stop(): Promise<void>;
  /** Asks an embedded database to stop without waiting (a process exiting at once); nothing for DATABASE_URL's. */
  signalStop(): void;
}

/** DATABASE_URL when set (checked to answer), else the embedded PostgreSQL under $WHETSTONE_HOME. */
export async function openDatabase(opts: {
  databaseUrl?: string;
  home: string;
  log?: (line: string) => void;
}): Promise<OpenedDatabase> {
  if (opts.databaseUrl) {
    await checkDatabaseReachable(opts.databaseUrl);
    return { url: opts.databaseUrl, embedded: false, stop: async () => {}, signalStop: () => {} };
  }
  const embedded = await startEmbeddedPostgres(opts.home, opts.log);
  return { url: embedded.url, embedded: true, stop: embedded.stop, signalStop: embedded.signalStop };
}
