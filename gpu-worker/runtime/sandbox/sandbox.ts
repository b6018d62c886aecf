/**
 * One QuickJS runtime and context holding one compiled environment and any number of its open
 * episodes. Every call has a CPU deadline (interrupt handler), the runtime has memory and stack
 * limits, and only JSON strings cross. QuickJS here has no process, require, fetch, timers or
 * filesystem: the context starts with the ECMAScript intrinsics only, and we add nothing but a
 * console that buffers (prelude.ts).
 *
 * Known imprecision: QuickJS attributes the back-edge of a loop without a condition
 * (`while (true)`, `for (;;)`) to the line before the loop, so a timeout there points one line up.
 */
import { type QuickJSContext, type QuickJSHandle, type QuickJSRuntime, type QuickJSWASMModule } from 'quickjs-emscripten';
import { type CompiledEnvironment } from './compile';
import { LOCKDOWN_SOURCE } from './lockdown';
import { SandboxError } from './errors';
import type { SandboxErrorKind } from '../../../sdk/dry-run-report';
import { DISPATCH_GLOBAL, type DriverMethod, type DriverMethods, type DriverResponse } from './protocol';
import { validateResponse } from './validate-response';

export interface SandboxLimits {
  /** CPU deadline of one call (reset, step, bot…). */
  callTimeoutMs: number;
  /** CPU deadline for loading the module (its top-level code). */
  loadTimeoutMs: number;
  /** QuickJS heap limit. */
  memoryBytes: number;
  /** QuickJS stack limit. Kept well inside Node's own stack: QuickJS's frames run on it. */
  stackBytes: number;
  /** Largest response accepted, in UTF-16 code units. */
  maxOutputChars: number;
}

export const DEFAULT_LIMITS: SandboxLimits = {
  callTimeoutMs: 1000,
  loadTimeoutMs: 2000,
  memoryBytes: 64 * 1024 * 1024,
  stackBytes: 256 * 1024,
  maxOutputChars: 1_000_000,
};

/** What QuickJS says when code writes to a frozen built-in or the global object (lockdown.ts). */
const FROZEN_HINT_PATTERN = /not extensible|read-only|read only/;
const FROZEN_HINT = ' (built-ins and the global object are frozen so that episodes stay independent: keep episode state in ctx.state)';

export class Sandbox {
  private deadline = Number.POSITIVE_INFINITY;
  private broken = false;
  private readonly dispatch: QuickJSHandle;

  private constructor(
    private readonly compiled: CompiledEnvironment,
    private readonly limits: SandboxLimits,
    private readonly runtime: QuickJSRuntime,
    private readonly vm: QuickJSContext,
  ) {
    runtime.setInterruptHandler(() => Date.now() > this.deadline);
    this.dispatch = this.load();
    this.lockdown();
    this.definedAt(); // cached now, while the sandbox is known to be healthy
  }

  /** Creates a sandbox and loads the environment; throws SandboxError (kind "load") when the module fails. */
  static create(module: QuickJSWASMModule, compiled: CompiledEnvironment, limits: SandboxLimits = DEFAULT_LIMITS): Sandbox {
    const runtime = module.newRuntime();
    runtime.setMemoryLimit(limits.memoryBytes);
    runtime.setMaxStackSize(limits.stackBytes);
    const vm = runtime.newContext();
    try {
      return new Sandbox(compiled, limits, runtime, vm);
    } catch (e) {
      vm.dispose();
      runtime.dispose();
      throw e;
    }
  }

  get usable(): boolean {
    return !this.broken;
  }

  /** Calls a driver method; throws SandboxError on any failure of the user's code. */
  call<M extends DriverMethod>(method: M, args: DriverMethods[M]['request']): { value: DriverMethods[M]['response']; logs: string[] } {
    if (this.broken) throw new SandboxError('crash', method, 'this sandbox was stopped after an earlier fatal error', null, '');
    const request = JSON.stringify({ method, args });
    const raw = this.guarded(method, () => {
      const arg = this.vm.newString(request);
      this.deadline = Date.now() + this.limits.callTimeoutMs;
      const result = this.vm.callFunction(this.dispatch, this.vm.undefined, arg);
      this.deadline = Number.POSITIVE_INFINITY;
      arg.dispose();
      return this.readString(result, method);
    });
    let response: DriverResponse;
    try {
      response = JSON.parse(raw) as DriverResponse;
    } catch {
      throw this.fail('invalid-output', method, 'the sandbox answered with something that is not JSON', '');
    }
    if (!response || typeof response !== 'object' || !Array.isArray(response.logs)) {
      throw this.fail('invalid-output', method, 'the sandbox answered with an unexpected shape', '');
    }
    const logs = response.logs.map(String);
    if (!response.ok) throw this.userError(response.error, method, logs);
    const checked = validateResponse(method, response.value);
    if (!checked.ok) throw this.fail('invalid-output', method, `${method} returned an invalid value: ${checked.problem}`, this.definedAt(), logs);
    return { value: checked.value, logs };
  }

  dispose(): void {
    this.broken = true;
    try {
      this.dispatch?.dispose();
      this.vm.dispose();
      this.runtime.dispose();
    } catch {
      // A runtime that failed mid-call may not dispose cleanly; its wasm module is discarded with it.
    }
  }

  private load(): QuickJSHandle {
    return this.guarded('load', () => {
      this.deadline = Date.now() + this.limits.loadTimeoutMs;
      const result = this.vm.evalCode(this.compiled.code, 'environment.js', { type: 'global' });
      this.deadline = Number.POSITIVE_INFINITY;
      if (result.error) {
        const error = this.dumpError(result.error);
        result.error.dispose();
        throw this.classified(error, 'load', []);
      }
      result.value.dispose();
      const dispatch = this.vm.getProp(this.vm.global, DISPATCH_GLOBAL);
      if (this.vm.typeof(dispatch) !== 'function') {
        dispatch.dispose();
        throw this.fail('load', 'load', 'the environment did not install its driver', '');
      }
      return dispatch;
    });
  }

  /** Freezes everything reachable from the global object (lockdown.ts), so that episodes stay independent. */
  private lockdown(): void {
    this.guarded('load', () => {
      this.deadline = Date.now() + this.limits.loadTimeoutMs;
      const result = this.vm.evalCode(LOCKDOWN_SOURCE, 'lockdown.js', { type: 'global' });
      this.deadline = Number.POSITIVE_INFINITY;
      if (result.error) {
        const error = this.dumpError(result.error);
        result.error.dispose();
        throw this.fail('load', 'load', `the sandbox could not freeze its built-ins: ${error.message}`, '');
      }
      result.value.dispose();
    });
  }

  /** Runs host-side QuickJS calls; a host-level failure (a trap, a host stack overflow) breaks this sandbox. */
  private guarded<T>(during: string, fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      this.deadline = Number.POSITIVE_INFINITY;
      if (e instanceof SandboxError) throw e;
      this.broken = true;
      throw new SandboxError('crash', during, `the sandbox failed: ${(e as Error).message}`, null, '');
    }
  }

  private readString(result: ReturnType<QuickJSContext['callFunction']>, method: string): string {
    if (result.error) {
      // Uncatchable errors (interrupt) and errors the driver could not handle (out of memory).
      const error = this.dumpError(result.error);
      result.error.dispose();
      throw this.classified(error, method, []);
    }
    const handle = result.value;
    try {
      if (this.vm.typeof(handle) !== 'string') throw this.fail('invalid-output', method, 'the sandbox did not answer with a string', '');
      const length = this.vm.getNumber(this.vm.getProp(handle, 'length'));
      if (length > this.limits.maxOutputChars) {
        throw this.fail(
          'output-too-large',
          method,
          `${method} produced ${length} characters of output; the limit is ${this.limits.maxOutputChars}`,
          this.definedAt(),
        );
      }
      return this.vm.getString(handle);
    } finally {
      handle.dispose();
    }
  }

  private dumpError(handle: QuickJSHandle): { name: string; message: string; stack: string } {
    try {
      const dumped = this.vm.dump(handle) as unknown;
      if (dumped && typeof dumped === 'object') {
        const e = dumped as Record<string, unknown>;
        return { name: String(e.name ?? 'Error'), message: String(e.message ?? ''), stack: String(e.stack ?? '') };
      }
      return { name: 'Error', message: String(dumped), stack: '' };
    } catch {
      // Dumping allocates; after an out-of-memory it may fail too.
      return { name: 'InternalError', message: 'out of memory', stack: '' };
    }
  }

  private userError(error: { name: string; message: string; stack: string; during: string; invalidOutput: boolean }, method: string, logs: string[]) {
    if (error.invalidOutput) {
      // The driver names where the user's function returned the value (driver.ts, returnSite); else the definition.
      const at = this.compiled.mapper.userFrame(error.stack) ? error.stack : this.definedAt();
      return this.fail('invalid-output', error.during || method, error.message, at, logs);
    }
    return this.classified(error, error.during || method, logs);
  }

  private classified(error: { name: string; message: string; stack: string }, during: string, logs: string[]): SandboxError {
    const kind: SandboxErrorKind =
      error.message === 'interrupted'
        ? 'timeout'
        : /out of memory/i.test(error.message)
          ? 'memory'
          : /stack overflow|call stack size/i.test(error.message)
            ? 'stack-overflow'
            : during === 'load'
              ? 'load'
              : 'throw';
    const detail =
      kind === 'timeout'
        ? `${during} ran longer than ${during === 'load' ? this.limits.loadTimeoutMs : this.limits.callTimeoutMs} ms and was stopped (an infinite loop?)`
        : kind === 'memory'
          ? `${during} went over the memory limit of ${Math.round(this.limits.memoryBytes / 1048576)} MB`
          : kind === 'stack-overflow'
            ? `${during} recursed too deeply (stack limit ${Math.round(this.limits.stackBytes / 1024)} KB)`
            : `${during} threw ${error.name}: ${error.message}${FROZEN_HINT_PATTERN.test(error.message) ? FROZEN_HINT : ''}`;
    // Without a user frame in the error's own stack, point at the environment's definition.
    const stack = this.compiled.mapper.userFrame(error.stack) ? error.stack : this.definedAt();
    return this.fail(kind, during, detail, stack, logs);
  }

  private fail(kind: SandboxErrorKind, during: string, detail: string, stack: string, logs: string[] = []): SandboxError {
    if (kind === 'memory') this.broken = true;
    const mapper = this.compiled.mapper;
    const frame = mapper.userFrame(stack);
    return new SandboxError(
      kind,
      during,
      detail,
      frame ? { file: frame.file, line: frame.line, column: frame.column } : null,
      mapper.userStack(stack),
      logs,
    );
  }

  private definedAtCache: string | undefined;
  private definedAt(): string {
    if (this.definedAtCache !== undefined) return this.definedAtCache;
    // Read straight from the definition via the driver's describe; never throws.
    try {
      const arg = this.vm.newString(JSON.stringify({ method: 'describe', args: {} }));
      this.deadline = Date.now() + this.limits.callTimeoutMs;
      const result = this.vm.callFunction(this.dispatch, this.vm.undefined, arg);
      this.deadline = Number.POSITIVE_INFINITY;
      arg.dispose();
      const text = result.error ? '' : this.vm.getString(result.value);
      (result.error ?? result.value).dispose();
      const parsed = JSON.parse(text) as DriverResponse;
      this.definedAtCache = parsed.ok ? String((parsed.value as { definedAt?: unknown }).definedAt ?? '') : '';
    } catch {
      this.definedAtCache = '';
    }
    return this.definedAtCache;
  }
}
