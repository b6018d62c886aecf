/**
 * An EnvironmentHandle backed by a sandbox from a pool. Episodes live inside one sandbox; when a
 * fatal error (memory, crash) forces a new sandbox, the episodes of the old one are reported as
 * lost instead of silently continuing in a fresh state.
 */
import { type EnvironmentHandle, type LogSink } from '../environment-handle';
import { type CompileOptions, compileEnvironment } from './compile';
import type { EnvironmentSource } from '../../../sdk/environment-source';
import { SandboxError } from './errors';
import { type PoolOptions, SandboxPool } from './pool';
import { type BotRequest, type DriverMethod, type DriverMethods, type ResetRequest, type StepRequest, type SymmetriesRequest } from './protocol';
import { type Sandbox } from './sandbox';
import type { CompileDiagnostic, EnvironmentDescription } from '../../../sdk/dry-run-report';

export class SandboxEnvironment implements EnvironmentHandle {
  private sandbox: Sandbox | null = null;
  private generation = 0;
  private readonly episodeGeneration = new Map<string, number>();
  private lastFatal: SandboxError | null = null;
  /** Calls into the sandbox and the wall time spent in them (for metrics and benchmarks). */
  readonly stats = { calls: 0, ms: 0 };

  private constructor(
    private readonly pool: SandboxPool,
    readonly description: EnvironmentDescription,
    private readonly onLogs: LogSink | undefined,
    private readonly ownsPool: boolean,
  ) {}

  /** A handle on a pool shared with other handles of the same environment version. */
  static async fromPool(pool: SandboxPool, onLogs?: LogSink, ownsPool = false): Promise<SandboxEnvironment> {
    const sandbox = await pool.acquire();
    try {
      const { value } = sandbox.call('describe', {});
      const env = new SandboxEnvironment(pool, value, onLogs, ownsPool);
      env.sandbox = sandbox;
      return env;
    } catch (e) {
      pool.release(sandbox);
      throw e;
    }
  }

  /** Compiles, loads and describes; compile errors come back as diagnostics, load errors as SandboxError. */
  static async load(
    source: EnvironmentSource,
    options: PoolOptions & CompileOptions & { onLogs?: LogSink } = {},
  ): Promise<{ ok: true; env: SandboxEnvironment } | { ok: false; errors: CompileDiagnostic[] }> {
    const compiled = await compileEnvironment(source, { tests: options.tests });
    if (!compiled.ok) return compiled;
    const pool = await SandboxPool.create(compiled.compiled, options);
    return { ok: true, env: await SandboxEnvironment.fromPool(pool, options.onLogs, true) };
  }

  async reset(request: ResetRequest) {
    const value = await this.call('reset', request, request.episodeId);
    this.episodeGeneration.set(request.episodeId, this.generation);
    return value;
  }

  async step(request: StepRequest) {
    this.checkAlive(request.episodeId);
    const value = await this.call('step', request, request.episodeId);
    if (!value.next) this.episodeGeneration.delete(request.episodeId);
    return value;
  }

  async bot(request: BotRequest) {
    this.checkAlive(request.episodeId);
    return (await this.call('bot', request, request.episodeId)).action;
  }

  async close(episodeId: string) {
    if (this.episodeGeneration.get(episodeId) === this.generation) await this.call('close', { episodeId }, episodeId);
    this.episodeGeneration.delete(episodeId);
  }

  /** Turns seen through the environment's symmetries (warm-start augmentation): per turn, one entry per symmetry. */
  async symmetries(request: SymmetriesRequest) {
    return (await this.call('symmetries', request, '')).turns;
  }

  /** The cases of tests.ts, for an environment loaded with `tests` (reward-tests.ts checks them). */
  async tests() {
    return (await this.call('tests', {}, '')).cases;
  }

  /** Synchronous step for hot loops (benchmarks, the dry run): same checks, no promise. */
  stepSync(request: StepRequest) {
    this.checkAlive(request.episodeId);
    const value = this.callSync('step', request, request.episodeId);
    if (!value.next) this.episodeGeneration.delete(request.episodeId);
    return value;
  }

  async dispose() {
    if (this.sandbox) this.pool.release(this.sandbox);
    this.sandbox = null;
    if (this.ownsPool) this.pool.dispose();
  }

  private checkAlive(episodeId: string) {
    const born = this.episodeGeneration.get(episodeId);
    if (born !== undefined && born !== this.generation) {
      this.episodeGeneration.delete(episodeId);
      throw new SandboxError(
        'crash',
        'step',
        `episode lost: its sandbox was replaced after a fatal error in another episode${this.lastFatal ? ` (${this.lastFatal.message})` : ''}`,
        null,
        '',
      );
    }
  }

  private async call<M extends DriverMethod>(method: M, args: DriverMethods[M]['request'], episodeId: string) {
    if (!this.sandbox) {
      this.sandbox = await this.pool.acquire();
    }
    return this.callSync(method, args, episodeId);
  }

  private callSync<M extends DriverMethod>(method: M, args: DriverMethods[M]['request'], episodeId: string): DriverMethods[M]['response'] {
    if (!this.sandbox) throw new SandboxError('crash', method, 'no sandbox (use the async methods after a fatal error)', null, '');
    const started = performance.now();
    try {
      const { value, logs } = this.sandbox.call(method, args);
      if (logs.length > 0) this.onLogs?.(logs, episodeId);
      return value;
    } catch (e) {
      if (e instanceof SandboxError) {
        if (e.logs.length > 0) this.onLogs?.(e.logs, episodeId);
        if (!this.sandbox.usable) {
          this.pool.release(this.sandbox);
          this.sandbox = null;
          this.generation++;
          this.lastFatal = e;
        } else if (method !== 'close' && method !== 'describe' && method !== 'tests' && method !== 'symmetries') {
          // An interrupted call never reached the driver's own clean-up: drop the episode there too.
          try {
            this.sandbox.call('close', { episodeId });
          } catch {
            // Best effort; the episode is already reported as failed.
          }
        }
        // The failing episode is over either way.
        this.episodeGeneration.delete(episodeId);
      }
      throw e;
    } finally {
      this.stats.calls++;
      this.stats.ms += performance.now() - started;
    }
  }
}
