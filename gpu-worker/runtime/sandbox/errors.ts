import type { SandboxErrorJson, SandboxErrorKind, SourceLocation } from '../../../sdk/dry-run-report';

/** An error from environment code (sandboxed or behind HTTP), located in the user's TypeScript where possible. */
export class SandboxError extends Error {
  override name = 'SandboxError';

  constructor(
    readonly kind: SandboxErrorKind,
    /** The user function that was running: reset, step, sample, tool "calculator", load… */
    readonly during: string,
    readonly detail: string,
    readonly location: SourceLocation | null,
    /** The user's frames, mapped to TypeScript positions. */
    readonly userStack: string,
    /** Console output of the failing call. */
    readonly logs: string[] = [],
  ) {
    super(`${detail}${location ? ` (${location.file}:${location.line}:${location.column})` : ''}`);
  }

  /** Fatal errors leave a sandbox that must not be reused. */
  get fatal(): boolean {
    return this.kind === 'memory' || this.kind === 'crash';
  }

  toJSON(): SandboxErrorJson {
    return { kind: this.kind, during: this.during, message: this.message, location: this.location, userStack: this.userStack };
  }
}

