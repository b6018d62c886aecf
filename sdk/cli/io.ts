/** What a command may touch: its streams, environment and working directory. Tests pass their own. */
export interface CliIO {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
  cwd: string;
  /** stdout is a terminal: redraw a progress bar in place instead of printing lines. */
  isTTY: boolean;
  /** Aborted on Ctrl-C; a watch then stops and the command exits 130. */
  signal?: AbortSignal;
  /** Standard input, for values that must not be typed on the command line (secrets set). */
  stdin?: AsyncIterable<Uint8Array | string> & { isTTY?: boolean };
}

export interface Printer {
  json: boolean;
  /** A line for people (nothing in --json mode). */
  line(text?: string): void;
  /** The one JSON document of a --json command. */
  document(value: unknown): void;
  /** A note on stderr (shown in --json mode too, since it does not disturb the document). */
  note(text: string): void;
}

/** JSON with dates as ISO strings and bigints as strings. */
export function toJson(value: unknown, indent = 2): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), indent);
}

export function printer(io: CliIO, json: boolean): Printer {
  return {
    json,
    line: (text = '') => {
      if (!json) io.stdout.write(`${text}\n`);
    },
    document: (value) => {
      if (json) io.stdout.write(`${toJson(value)}\n`);
    },
    note: (text) => void io.stderr.write(`${text}\n`),
  };
}
