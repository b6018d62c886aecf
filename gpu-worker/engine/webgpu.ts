/**
 * The WebGPU backend: tfjs's `@tensorflow/tfjs-backend-webgpu` on Dawn's Node addon (`webgpu`),
 * which runs on any Vulkan driver (NVIDIA's on a GPU machine, Mesa's software lavapipe in CI).
 *
 * We pick the adapter and make the device ourselves rather than let the package's own factory do
 * it, so that the worker knows which adapter it got (advertised to the scheduler), a software
 * adapter can be refused (`auto`), and a lost device or an out-of-memory error is noticed: Dawn
 * reports both asynchronously, and a job must fail or be requeued with that reason, never hang or
 * train on garbage (`checkDevice`, called after every read in `reads.ts`).
 */
import * as tf from '@tensorflow/tfjs';
import os from 'node:os';

export interface AdapterInfo {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** A CPU implementation (lavapipe, SwiftShader): never chosen by `auto`. */
  software: boolean;
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
}

/** Why the WebGPU device stopped being usable (lost, out of memory), or null while it is fine. */
let fault: string | null = null;

/** Thrown at the first read after the device was lost or ran out of memory (see `reads.ts`). */
export class DeviceFaultError extends Error {
  constructor(
    readonly reason: string,
    /** A lost device is the machine's fault, not the job's: the attempt is requeued. */
    readonly requeue: boolean,
  ) {
    super(reason);
    this.name = 'DeviceFaultError';
  }
}

/** Throws `DeviceFaultError` when the device has failed since it was made. */
export function checkDevice(): void {
  if (fault) throw new DeviceFaultError(fault, fault.startsWith('WebGPU device lost'));
}

/**
 * A read that failed: the device's fault when it has one, else `e`. A lost device aborts its
 * mappings (AbortError) possibly before its `lost` promise has settled, so on an abort this waits
 * for whichever comes first of that promise and the queue's work being done (both settle on a
 * lost device and on a healthy one), then looks again.
 */
export async function readError(e: unknown): Promise<unknown> {
  if (!fault && made && (e as { name?: string } | null)?.name === 'AbortError') {
    await Promise.race([made.lost, made.device.queue.onSubmittedWorkDone()]);
  }
  return fault && !(e instanceof DeviceFaultError) ? new DeviceFaultError(fault, fault.startsWith('WebGPU device lost')) : e;
}

interface GpuAdapterLike {
  info: Partial<Record<'vendor' | 'architecture' | 'device' | 'description', string>> & { isFallbackAdapter?: boolean };
  limits: Record<string, number>;
  features: ReadonlySet<string>;
  requestDevice(descriptor?: unknown): Promise<GpuDeviceLike>;
}

interface GpuDeviceLike {
  lost: Promise<{ reason: string; message: string }>;
  queue: { onSubmittedWorkDone(): Promise<void> };
  addEventListener(type: 'uncapturederror', listener: (e: { error: { constructor: { name: string }; message: string } }) => void): void;
  destroy(): void;
}

const SOFTWARE = /llvmpipe|lavapipe|swiftshader|software/i;

function describe(adapter: GpuAdapterLike): AdapterInfo {
  const i = adapter.info;
  const text = [i.vendor, i.architecture, i.device, i.description].join(' ');
  return {
    vendor: i.vendor ?? '',
    architecture: i.architecture ?? '',
    device: i.device ?? '',
    description: i.description ?? '',
    software: i.isFallbackAdapter === true || SOFTWARE.test(text),
    maxBufferSize: adapter.limits.maxBufferSize,
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
  };
}

/** A short name for the adapter, as benchmarks and the worker print it. */
export function adapterName(a: AdapterInfo): string {
  const base = a.description || a.device || a.vendor || 'WebGPU adapter';
  return `${base} (${[a.vendor, a.architecture].filter(Boolean).join(' ')}${a.software && a.architecture !== 'software' ? ', software' : ''})`;
}

/** The device this process made; `lost` settles once its fault is recorded. */
let made: { device: GpuDeviceLike; adapter: AdapterInfo; lost: Promise<void> } | null = null;

/**
 * Find an adapter and make the tfjs backend on it; returns why not (no addon, no Vulkan driver, a
 * software adapter where only hardware is allowed) instead of throwing.
 */
export async function tryWebgpu(opts: { allowSoftware: boolean }): Promise<{ failure: string | null; adapter?: AdapterInfo }> {
  try {
    if (made && !fault) {
      if (made.adapter.software && !opts.allowSoftware) return { failure: softwareRefused(made.adapter) };
      if (!(await tf.setBackend('webgpu'))) return { failure: 'webgpu: setBackend failed' };
      return { failure: null, adapter: made.adapter };
    }
    // Dawn warns when this is unset; any writable folder will do.
    process.env.XDG_RUNTIME_DIR ??= os.tmpdir();
    // The tfjs package registers its own backend factory at import when navigator.gpu exists, so it
    // is imported first (kernels only) and ours is registered below.
    const { WebGPUBackend } = await import('@tensorflow/tfjs-backend-webgpu');
    const { create, globals } = await import('webgpu');
    Object.assign(globalThis, globals);
    const gpu = create([]);
    const nav = (globalThis as { navigator?: object }).navigator;
    if (nav) Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true });
    else Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });

    const adapter = (await gpu.requestAdapter({ powerPreference: 'high-performance' })) as unknown as GpuAdapterLike | null;
    if (!adapter) return { failure: 'webgpu: no adapter (a GPU machine needs its vendor\'s Vulkan driver; see the engine README)' };
    const info = describe(adapter);
    if (info.software && !opts.allowSoftware) return { failure: softwareRefused(info), adapter: info };

    const l = adapter.limits;
    const device = await adapter.requestDevice({
      requiredFeatures: adapter.features.has('timestamp-query') ? ['timestamp-query'] : [],
      // The adapter's own limits, not WebGPU's defaults (a 128 MiB binding would cap the model).
      requiredLimits: Object.fromEntries(
        [
          'maxComputeWorkgroupStorageSize',
          'maxComputeWorkgroupsPerDimension',
          'maxStorageBufferBindingSize',
          'maxBufferSize',
          'maxComputeWorkgroupSizeX',
          'maxComputeInvocationsPerWorkgroup',
          'maxStorageBuffersPerShaderStage',
        ].map((k) => [k, l[k]]),
      ),
    });
    fault = null;
    const lost = device.lost.then((info) => {
      fault ??= `WebGPU device lost: ${info.message || info.reason}`;
    });
    device.addEventListener('uncapturederror', (e) => {
      const kind = e.error.constructor.name;
      fault ??= kind === 'GPUOutOfMemoryError' ? `WebGPU out of memory: ${e.error.message}` : `WebGPU error: ${e.error.message}`;
    });
    if (tf.findBackendFactory('webgpu')) tf.removeBackend('webgpu');
    const backend = new WebGPUBackend(device as never, adapter.info as never);
    tf.registerBackend('webgpu', () => backend);
    if (!(await tf.setBackend('webgpu'))) return { failure: 'webgpu: setBackend failed', adapter: info };
    made = { device, adapter: info, lost };
    return { failure: null, adapter: info };
  } catch (err) {
    return { failure: `webgpu: ${(err as Error).message.split('\n')[0]}` };
  }
}

function softwareRefused(a: AdapterInfo): string {
  return `webgpu: only a software adapter (${adapterName(a)}); auto never picks one (WHETSTONE_BACKEND=webgpu uses it)`;
}
