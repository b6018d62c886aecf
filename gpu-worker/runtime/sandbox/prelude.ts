/**
 * Runs first inside the sandbox, before the user's module. QuickJS has no console, timers or host
 * objects; this adds a bounded console whose lines go back with each response, and makes
 * Math.random draw from the current episode's seeded generator so episodes replay exactly.
 */
const MAX_LINES_PER_CALL = 200;
const MAX_LINE_CHARS = 2000;

let lines: string[] = [];
let dropped = 0;

function format(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function write(level: string, args: unknown[]): void {
  if (lines.length >= MAX_LINES_PER_CALL) {
    dropped++;
    return;
  }
  const text = args.map(format).join(' ');
  lines.push((level === 'log' ? '' : `[${level}] `) + (text.length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS)}…` : text));
}

/** Returns and clears the lines logged since the last call. */
export function drainLogs(): string[] {
  const out = lines;
  if (dropped > 0) out.push(`… ${dropped} more lines dropped`);
  lines = [];
  dropped = 0;
  return out;
}

let randomSource: () => number = () => {
  throw new Error('Math.random is only available inside reset, step, sample, tools and bots; prefer ctx.rng');
};

/** Points Math.random at the generator of the episode about to run. */
export function setRandomSource(next: () => number): void {
  randomSource = next;
}

const g = globalThis as Record<string, unknown>;
g.console = {
  log: (...a: unknown[]) => write('log', a),
  info: (...a: unknown[]) => write('info', a),
  warn: (...a: unknown[]) => write('warn', a),
  error: (...a: unknown[]) => write('error', a),
  debug: (...a: unknown[]) => write('debug', a),
};
Math.random = () => randomSource();
