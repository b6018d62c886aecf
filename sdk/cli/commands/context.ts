import type { GlobalOptions } from '../args';
import type { Connection } from '../client';
import type { CliIO, Printer } from '../io';

/** What every command gets: its I/O, the printer for people or --json, and a lazy connection. */
export interface CommandContext {
  io: CliIO;
  out: Printer;
  globals: GlobalOptions;
  connect(): Promise<Connection>;
}

/** Runs a call and turns its failure into a CliError with the right exit code. */
export async function call<T>(conn: Connection, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (e) {
    throw conn.fail(e);
  }
}
