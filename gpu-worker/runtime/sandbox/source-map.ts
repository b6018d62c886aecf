/**
 * Maps QuickJS stack frames in the bundle back to the user's TypeScript, using Node's built-in
 * source-map reader (node:module SourceMap).
 */
import { SourceMap, type SourceMapPayload } from 'node:module';

export interface MappedFrame {
  functionName: string;
  file: string;
  line: number;
  column: number;
  /** True for the user's files, false for the SDK and the driver. */
  user: boolean;
}

const USER_PREFIX = 'user:';
// QuickJS frames look like "    at step (bundle.js:120:17)" or "    at bundle.js:3:1".
const FRAME = /^\s*at (?:(.*?) \()?([^()\s]+):(\d+):(\d+)\)?\s*$/;

export class SourceMapper {
  private constructor(private readonly map: SourceMap | null) {}

  static fromInlineBundle(code: string): SourceMapper {
    const marker = '//# sourceMappingURL=data:application/json;base64,';
    const at = code.lastIndexOf(marker);
    if (at < 0) return new SourceMapper(null);
    const payload = JSON.parse(Buffer.from(code.slice(at + marker.length).trim(), 'base64').toString('utf8')) as SourceMapPayload;
    return new SourceMapper(new SourceMap(payload));
  }

  /** Maps a 1-based bundle position to the original, or null when it has no mapping. */
  position(line: number, column: number): Omit<MappedFrame, 'functionName'> | null {
    if (!this.map) return null;
    const entry = this.map.findEntry(line - 1, column - 1) as Partial<{
      originalSource: string;
      originalLine: number;
      originalColumn: number;
    }>;
    if (entry.originalSource === undefined || entry.originalLine === undefined) return null;
    const source = entry.originalSource;
    const user = source.startsWith(USER_PREFIX) || source.includes(`/${USER_PREFIX}`);
    const file = user ? source.slice(source.indexOf(USER_PREFIX) + USER_PREFIX.length) : source;
    return { file, line: entry.originalLine + 1, column: (entry.originalColumn ?? 0) + 1, user };
  }

  /** Every frame of a QuickJS stack that maps into the sources. */
  frames(stack: string): MappedFrame[] {
    const out: MappedFrame[] = [];
    for (const text of stack.split('\n')) {
      const m = FRAME.exec(text);
      if (!m) continue;
      const mapped = this.position(Number(m[3]), Number(m[4]));
      if (mapped) out.push({ functionName: m[1] ?? '', ...mapped });
    }
    return out;
  }

  /** The innermost frame in the user's own files: where an error "is" for the user. */
  userFrame(stack: string): MappedFrame | null {
    return this.frames(stack).find((f) => f.user) ?? null;
  }

  /** The stack rewritten to original positions, user frames only, for display. */
  userStack(stack: string): string {
    return this.frames(stack)
      .filter((f) => f.user)
      .map((f) => `    at ${f.functionName ? `${f.functionName} ` : ''}(${f.file}:${f.line}:${f.column})`)
      .join('\n');
  }

  /** The original text of a user file, from the map's sourcesContent. */
  sourceLine(file: string, line: number): string {
    const payload = this.map?.payload;
    if (!payload) return '';
    const index = payload.sources.findIndex((s) => s === `${USER_PREFIX}${file}` || s.endsWith(`/${USER_PREFIX}${file}`));
    const content = index >= 0 ? payload.sourcesContent?.[index] : undefined;
    return content?.split('\n')[line - 1] ?? '';
  }
}
