/**
 * Reuses sandboxes of one compiled environment: creating a QuickJS context and loading a bundle
 * costs milliseconds, a call into a warm one costs microseconds. Each pool owns its own wasm
 * module instance, so a sandbox that failed at the host level (a wasm trap) is replaced together
 * with its module without touching other environments.
 */
import { newQuickJSWASMModule, type QuickJSWASMModule } from 'quickjs-emscripten';
import { type CompiledEnvironment } from './compile';
import { DEFAULT_LIMITS, Sandbox, type SandboxLimits } from './sandbox';

export interface PoolOptions {
  limits?: Partial<SandboxLimits>;
  /** Idle sandboxes kept for reuse. */
  maxIdle?: number;
}

export class SandboxPool {
  private readonly idle: Sandbox[] = [];
  private module: QuickJSWASMModule;
  private moduleSuspect = false;
  readonly limits: SandboxLimits;
  private readonly maxIdle: number;

  private constructor(
    readonly compiled: CompiledEnvironment,
    module: QuickJSWASMModule,
    options: PoolOptions,
  ) {
    this.module = module;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.maxIdle = options.maxIdle ?? 2;
  }

  /** Creates a pool and loads the environment once, so load errors surface here (SandboxError). */
  static async create(compiled: CompiledEnvironment, options: PoolOptions = {}): Promise<SandboxPool> {
    const pool = new SandboxPool(compiled, await newQuickJSWASMModule(), options);
    pool.release(await pool.acquire());
    return pool;
  }

  /** A loaded sandbox for exclusive use until `release`. */
  async acquire(): Promise<Sandbox> {
    while (this.idle.length > 0) {
      const sandbox = this.idle.pop()!;
      if (sandbox.usable) return sandbox;
      sandbox.dispose();
    }
    if (this.moduleSuspect) {
      this.module = await newQuickJSWASMModule();
      this.moduleSuspect = false;
    }
    return Sandbox.create(this.module, this.compiled, this.limits);
  }

  /** Returns a sandbox; broken ones are discarded (and their module replaced on next acquire). */
  release(sandbox: Sandbox): void {
    if (!sandbox.usable) {
      sandbox.dispose();
      this.moduleSuspect = true;
      return;
    }
    if (this.idle.length < this.maxIdle) this.idle.push(sandbox);
    else sandbox.dispose();
  }

  dispose(): void {
    for (const sandbox of this.idle.splice(0)) sandbox.dispose();
  }
}
