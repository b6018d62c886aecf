/**
 * Backend choice. `WHETSTONE_BACKEND=auto|tensorflow-gpu|webgpu|tensorflow|wasm|cpu`.
 *
 * `auto` tries @tensorflow/tfjs-node-gpu (CUDA), then WebGPU on a hardware adapter (webgpu.ts:
 * Dawn's Node addon over any Vulkan driver; a software adapter such as lavapipe is never chosen by
 * `auto`), then @tensorflow/tfjs-node, then the wasm backend with SIMD, then the plain JavaScript
 * cpu backend. The two tfjs-node packages download libtensorflow at install time, which fails
 * offline, so they are never dependencies: they are imported by a computed name and used only when
 * a machine has installed them itself.
 */
import * as tf from '@tensorflow/tfjs';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from './errors';
import { describeNative, installNativeKernels } from './native';
import { type AdapterInfo, adapterName, tryWebgpu } from './webgpu';

export type BackendChoice = 'auto' | 'tensorflow-gpu' | 'webgpu' | 'tensorflow' | 'wasm' | 'cpu';
const BACKEND_CHOICES: readonly BackendChoice[] = ['auto', 'tensorflow-gpu', 'webgpu', 'tensorflow', 'wasm', 'cpu'];

export interface DeviceInfo {
  kind: 'cuda' | 'webgpu' | 'cpu' | 'wasm';
  name: string;
  /** Memory the device can use, in bytes (GPU memory, or the wasm heap limit, or system RAM). */
  memoryBytes: number;
}

export interface BackendReport {
  /** The name to advertise: tensorflow-gpu, webgpu, tensorflow, wasm or cpu. */
  backend: Exclude<BackendChoice, 'auto'>;
  /** tfjs's own backend name (tensorflow, webgpu, wasm, cpu). */
  tfjsBackend: string;
  /** The WebGPU adapter, on the webgpu backend. */
  adapter?: AdapterInfo;
  devices: DeviceInfo[];
  simd: boolean;
  /** Threads the kernels run on (the native kernels' pool on wasm; 1 for wasm's own kernels). */
  threads: number;
  /** On wasm: the native kernels in use, or why the wasm kernels run (native.ts). */
  kernels?: string;
  /** True when the model routes matmuls through the 2-D non-transposed custom-gradient path. */
  fastMatmulPath: boolean;
  /** Why earlier candidates were skipped (for `auto`). */
  skipped: string[];
}

let current: BackendReport | null = null;

/** The report of the initialised backend, or null before `initBackend`. */
export function backendReport(): BackendReport | null {
  return current;
}

/**
 * On wasm only 2-D, non-transposed matmuls reach XNNPACK (see OFFLINE.md), so the model keeps every
 * matmul that shape. The native backends are fast with plain ops.
 */
export function useFastMatmulPath(): boolean {
  if (matmulPathOverride !== 'auto') return matmulPathOverride === 'fast';
  // The JavaScript cpu backend has no gather gradient problem, but the fast path is no slower
  // there and keeps cpu runs numerically identical to wasm runs.
  return tf.getBackend() === 'wasm' || tf.getBackend() === 'cpu';
}

let matmulPathOverride: 'auto' | 'fast' | 'plain' = 'auto';

/** Force the matmul path (tests and the benchmark's naive baseline); 'auto' follows the backend. */
export function setMatmulPath(path: 'auto' | 'fast' | 'plain'): void {
  matmulPathOverride = path;
}

function parseChoice(value: string | undefined): BackendChoice {
  const choice = (value ?? 'auto').trim() || 'auto';
  if (!(BACKEND_CHOICES as readonly string[]).includes(choice)) {
    throw new ConfigError('WHETSTONE_BACKEND', `must be one of ${BACKEND_CHOICES.join(', ')}, got "${choice}"`);
  }
  return choice as BackendChoice;
}

async function importOptional(name: string): Promise<void> {
  // A computed specifier keeps bundlers and tsc from resolving a package that is not installed.
  const specifier = name;
  await import(/* @vite-ignore */ specifier);
}

function cudaDevices(): DeviceInfo[] {
  try {
    const out = execFileSync('nvidia-smi', ['--query-gpu=name,memory.total', '--format=csv,noheader,nounits'], {
      encoding: 'utf8',
      timeout: 5000,
    });
    return out
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [name, mib] = line.split(',').map((s) => s.trim());
        return { kind: 'cuda' as const, name, memoryBytes: Number(mib) * 1024 * 1024 };
      });
  } catch {
    return [{ kind: 'cuda', name: 'cuda:0', memoryBytes: 0 }];
  }
}

/**
 * The adapter as a device: WebGPU does not tell how much memory a GPU has, so an NVIDIA adapter's
 * comes from nvidia-smi where it answers, and otherwise the largest buffer the adapter allows.
 */
function adapterDevice(a: AdapterInfo): DeviceInfo {
  // NVIDIA's Vulkan driver describes itself by driver version only; nvidia-smi names the card.
  const smi = a.vendor === 'nvidia' ? cudaDevices()[0] : undefined;
  const name = smi && smi.memoryBytes > 0 ? `${smi.name} · ${adapterName(a)}` : adapterName(a);
  return { kind: 'webgpu', name, memoryBytes: smi?.memoryBytes || a.maxBufferSize };
}

function cpuDevice(): DeviceInfo {
  return { kind: 'cpu', name: os.cpus()[0]?.model ?? 'cpu', memoryBytes: os.totalmem() };
}

async function tryNative(pkg: string, tfjsName: string): Promise<string | null> {
  try {
    await importOptional(pkg);
    if (!(await tf.setBackend(tfjsName))) return `${pkg}: setBackend('${tfjsName}') failed`;
    await tf.ready();
    return null;
  } catch (err) {
    return `${pkg}: ${(err as Error).message.split('\n')[0]}`;
  }
}

async function tryWasm(): Promise<string | null> {
  try {
    const wasm = await import('@tensorflow/tfjs-backend-wasm');
    // In Node the .wasm files must be located explicitly; they sit in the package's dist folder.
    const require = createRequire(import.meta.url);
    const dist = path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));
    wasm.setWasmPaths(dist + path.sep);
    // Threads do not help in Node (OFFLINE.md) and need SharedArrayBuffer workers.
    tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
    if (!(await tf.setBackend('wasm'))) return 'wasm: setBackend failed';
    await tf.ready();
    return null;
  } catch (err) {
    return `wasm: ${(err as Error).message.split('\n')[0]}`;
  }
}

/**
 * Initialise the backend named by `choice` (default: the WHETSTONE_BACKEND variable, else auto).
 * An explicit choice that cannot load throws; `auto` falls through the list.
 */
export async function initBackend(choice?: BackendChoice | string): Promise<BackendReport> {
  const wanted = parseChoice(choice ?? process.env.WHETSTONE_BACKEND);
  const order: Exclude<BackendChoice, 'auto'>[] =
    wanted === 'auto' ? ['tensorflow-gpu', 'webgpu', 'tensorflow', 'wasm', 'cpu'] : [wanted];
  const skipped: string[] = [];
  let adapter: AdapterInfo | undefined;
  for (const candidate of order) {
    let failure: string | null;
    if (candidate === 'tensorflow-gpu') failure = await tryNative('@tensorflow/tfjs-node-gpu', 'tensorflow');
    else if (candidate === 'webgpu') {
      const got = await tryWebgpu({ allowSoftware: wanted === 'webgpu' });
      failure = got.failure;
      adapter = got.adapter;
    }
    else if (candidate === 'tensorflow') failure = await tryNative('@tensorflow/tfjs-node', 'tensorflow');
    else if (candidate === 'wasm') failure = await tryWasm();
    else {
      await tf.setBackend('cpu');
      await tf.ready();
      failure = null;
    }
    if (failure) {
      skipped.push(failure);
      continue;
    }
    const simd = candidate === 'wasm' ? Boolean(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT')) : false;
    const native = candidate === 'wasm' ? installNativeKernels() : undefined;
    const devices: DeviceInfo[] =
      candidate === 'tensorflow-gpu'
        ? cudaDevices()
        : candidate === 'webgpu' && adapter
          ? [adapterDevice(adapter)]
          : candidate === 'wasm'
          ? // wasm32 addresses at most 4 GiB whatever the machine has.
            [{ kind: 'wasm', name: `wasm${simd ? '-simd' : ''}${native?.loaded ? ` + native ${native.kernel} × ${native.threads} threads` : ''}`, memoryBytes: Math.min(os.totalmem(), 4 * 1024 ** 3) }]
          : [cpuDevice()];
    current = {
      backend: candidate,
      tfjsBackend: tf.getBackend(),
      ...(adapter && { adapter }),
      devices,
      simd,
      threads: native?.loaded ? native.threads : 1,
      ...(native && { kernels: describeNative(native) }),
      fastMatmulPath: useFastMatmulPath(),
      skipped,
    };
    return current;
  }
  throw new ConfigError('WHETSTONE_BACKEND', `backend "${wanted}" could not be loaded: ${skipped.join('; ')}`);
}
