import { type SourceLocation } from './compile';

export type SandboxErrorKind =
  /** TypeScript that does not compile. */
  | 'syntax'
  /** The module threw while loading, or has no valid default export. */
  | 'load'
  /** User code threw. */
  | 'throw'
  /** A call ran past its CPU deadline (infinite loop). */
  | 'timeout'
  /** The sandbox's memory limit was hit. */
  | 'memory'
  /** Recursion too deep for the sandbox's stack limit. */
  | 'stack-overflow'
  /** User code returned something the runtime cannot use (NaN reward, wrong shape). */
  | 'invalid-output'
  /** A response larger than the output limit. */
  | 'output-too-large'
  /** The sandbox itself failed; it has been replaced. */
  | 'crash'
  /** An HTTP environment did not answer (down, timed out, 5xx after retries). */
  | 'unavailable'
  /** An HTTP environment answered with something outside the protocol. */
  | 'protocol';

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

export interface SandboxErrorJson {
  kind: SandboxErrorKind;
  during: string;
  message: string;
  location: SourceLocation | null;
  userStack: string;
}
