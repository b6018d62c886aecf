/**
 * The engine's native CPU kernels (native/: a Node addon built by `npm ci`, see the README's
 * "Native kernels"). On the wasm backend they take over tfjs's matrix products — `BatchMatMul`
 * and `_FusedMatMul`, the kernels every matmul of the model, its gradients, LoRA and the sampler
 * runs — computing on the wasm heap in place, with AVX-512 or AVX2+FMA microkernels on a pool of
 * threads. tfjs stays the framework: autodiff, the other ops and checkpoints are unchanged.
 *
 * When the addon is missing (no compiler at install, another platform), fails to load (another
 * Node ABI) or is turned off (`WHETSTONE_NATIVE=0`), the engine keeps the wasm kernels and the
 * reason is reported once (`nativeStatus()`: the worker's log and `--check`).
 */
import * as tf from '@tensorflow/tfjs';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface NativeAddon {
  gemm(
    a: Float32Array,
    b: Float32Array,
    c: Float32Array,
    bias: Float32Array | null,
    batch: number,
    m: number,
    n: number,
    k: number,
    transA: boolean,
    transB: boolean,
    aStride: number,
    bStride: number,
    relu: boolean,
  ): void;
  attentionForward(qkv: Float32Array, P: Float32Array, y: Float32Array, B: number, T: number, H: number, hd: number, Tp: number, scale: number): void;
  attentionBackward(qkv: Float32Array, P: Float32Array, dy: Float32Array, dqkv: Float32Array, B: number, T: number, H: number, hd: number, Tp: number, scale: number): void;
  rotaryAttentionForward(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    cos: Float32Array,
    sin: Float32Array,
    P: Float32Array,
    y: Float32Array,
    B: number,
    T: number,
    H: number,
    Hkv: number,
    hd: number,
    Tp: number,
    R: number,
    scale: number,
  ): void;
  rotaryAttentionBackward(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    cos: Float32Array,
    sin: Float32Array,
    P: Float32Array,
    dy: Float32Array,
    dq: Float32Array,
    dk: Float32Array,
    dv: Float32Array,
    B: number,
    T: number,
    H: number,
    Hkv: number,
    hd: number,
    Tp: number,
    R: number,
    scale: number,
  ): void;
  rmsNormForward(x: Float32Array, gain: Float32Array, y: Float32Array, rstd: Float32Array, n: number, d: number, eps: number): void;
  rmsNormBackward(dy: Float32Array, x: Float32Array, rstd: Float32Array, gain: Float32Array, dx: Float32Array, dgain: Float32Array, n: number, d: number): void;
  swigluForward(gate: Float32Array, up: Float32Array, z: Float32Array): void;
  loraLinearForward(x: Float32Array, w: Float32Array, bias: Float32Array | null, a: Float32Array, b: Float32Array, scale: number, y: Float32Array, xa: Float32Array, n: number, inDim: number, outDim: number, r: number): void;
  loraLinearBackward(
    dy: Float32Array,
    x: Float32Array,
    xa: Float32Array,
    w: Float32Array,
    a: Float32Array,
    b: Float32Array,
    scale: number,
    dx: Float32Array,
    da: Float32Array,
    db: Float32Array,
    n: number,
    inDim: number,
    outDim: number,
    r: number,
  ): void;
  swigluBackward(dz: Float32Array, gate: Float32Array, up: Float32Array, dgate: Float32Array, dup: Float32Array): void;
  geluForward(x: Float32Array, y: Float32Array, s: Float32Array): void;
  layerNormForward(x: Float32Array, gain: Float32Array, bias: Float32Array, y: Float32Array, stats: Float32Array, n: number, d: number, eps: number): void;
  layerNormBackward(dy: Float32Array, x: Float32Array, stats: Float32Array, gain: Float32Array, dx: Float32Array, dgain: Float32Array, dbias: Float32Array, n: number, d: number): void;
  decodeStep(tokens: Int32Array, positions: Int32Array, keyMask: Float32Array, weights: Float32Array[], caches: Float32Array[], logits: Float32Array, dims: number[], eps: number): void;
  geluBackward(dy: Float32Array, x: Float32Array, s: Float32Array, dx: Float32Array): void;
  adam(params: Float32Array[], grads: Float32Array[], m: Float32Array[], v: Float32Array[], decays: Float64Array, hyper: Float64Array): void;
  sumSquares(arrays: Float32Array[]): number;
  chooseTokens(
    logits: Float32Array,
    B: number,
    V: number,
    temperature: number,
    allowed: Uint8Array,
    live: Uint8Array,
    rng: Uint32Array,
    tokens: Int32Array,
    logprobs: Float64Array,
  ): void;
  columnSums(x: Float32Array, out: Float32Array, n: number, m: number): void;
  targetLogProbForward(x: Float32Array, targets: Int32Array, logp: Float32Array, lse: Float32Array, n: number, V: number): void;
  targetLogProbBackward(g: Float32Array, x: Float32Array, lse: Float32Array, targets: Int32Array, dx: Float32Array, n: number, V: number): void;
  info(): { kernel: string; threads: number; features: string[] };
  setThreads(n: number): void;
  setKernel(name: string): boolean;
}

export type NativeStatus =
  | { loaded: true; kernel: string; threads: number; features: string[] }
  | { loaded: false; reason: string };

/** Where node-gyp puts the addon (scripts/build-native.mjs builds it). */
export const NATIVE_ADDON_PATH = path.join(path.dirname(fileURLToPath(import.meta.url)), 'native/build/Release/whetstone_native.node');

let addon: NativeAddon | null = null;

/** Every function this code calls on the addon. */
const REQUIRED = ['gemm', 'attentionForward', 'attentionBackward', 'rotaryAttentionForward', 'rotaryAttentionBackward', 'rmsNormForward', 'rmsNormBackward', 'swigluForward', 'swigluBackward', 'loraLinearForward', 'loraLinearBackward', 'geluForward', 'geluBackward', 'layerNormForward', 'layerNormBackward', 'decodeStep', 'adam', 'sumSquares', 'chooseTokens', 'columnSums', 'targetLogProbForward', 'targetLogProbBackward', 'info', 'setThreads', 'setKernel'] as const;
let status: NativeStatus | null = null;

function load(): NativeStatus {
  if (process.env.WHETSTONE_NATIVE === '0') return { loaded: false, reason: 'turned off (WHETSTONE_NATIVE=0)' };
  // WHETSTONE_NATIVE_ADDON: another build of the addon (tests load a broken one).
  const file = process.env.WHETSTONE_NATIVE_ADDON || NATIVE_ADDON_PATH;
  if (!existsSync(file)) {
    return { loaded: false, reason: 'not built (npm ci builds it; `npm run native:build` says why it cannot)' };
  }
  try {
    addon = createRequire(import.meta.url)(file) as NativeAddon;
    // An addon built from older sources (pulled without npm ci) lacks kernels this code calls.
    const missing = REQUIRED.filter((name) => typeof (addon as unknown as Record<string, unknown>)[name] !== 'function');
    if (missing.length > 0) {
      addon = null;
      return { loaded: false, reason: `built from older sources (no ${missing.join(', ')}): run npm run native:build` };
    }
    const threads = Number(process.env.WHETSTONE_THREADS);
    if (Number.isInteger(threads) && threads >= 1) addon.setThreads(threads);
    return { loaded: true, ...addon.info() };
  } catch (err) {
    addon = null;
    return { loaded: false, reason: `could not load: ${(err as Error).message.split('\n')[0]}` };
  }
}

/** Whether the native kernels loaded, and which microkernel and threads they use (or why not). */
export function nativeStatus(): NativeStatus {
  status ??= load();
  return status;
}

/** A one-line summary for logs and `--check`. */
export function describeNative(s: NativeStatus = nativeStatus()): string {
  return s.loaded
    ? `native kernels: ${s.kernel} on ${s.threads} thread${s.threads === 1 ? '' : 's'} (CPU: ${s.features.join(', ') || 'baseline'})`
    : `native kernels off, using wasm kernels: ${s.reason}`;
}

let enabled = true;

/** Route the products to the wasm kernels (false) or the native ones (tests compare the two). */
export function setNativeKernelsEnabled(on: boolean): void {
  enabled = on;
}

/** Threads and microkernel of the native path (tests: results must not depend on them). */
export function configureNative(options: { threads?: number; kernel?: string }): void {
  if (!addon) throw new Error('the native kernels are not loaded');
  if (options.threads !== undefined) addon.setThreads(options.threads);
  if (options.kernel !== undefined && !addon.setKernel(options.kernel)) throw new Error(`this CPU cannot run the ${options.kernel} kernel`);
  status = { loaded: true, ...addon.info() };
}

interface WasmBackend {
  makeOutput(shape: number[], dtype: 'float32'): tf.TensorInfo;
  typedArrayFromHeap(t: tf.TensorInfo): Float32Array;
}

interface Product {
  batch: number;
  m: number;
  n: number;
  k: number;
  aStride: number;
  bStride: number;
  outShape: number[];
}

/**
 * The product's sizes, or null where the native kernel does not apply and the wasm kernel runs
 * (non-float inputs; batch dimensions that broadcast other than one side being a single matrix;
 * mismatched inner sizes, which the wasm kernel reports in tfjs's words).
 */
function productOf(a: tf.TensorInfo, b: tf.TensorInfo, transA: boolean, transB: boolean): Product | null {
  if (a.dtype !== 'float32' || b.dtype !== 'float32' || a.shape.length < 2 || b.shape.length < 2) return null;
  const ar = a.shape.length, br = b.shape.length;
  const m = transA ? a.shape[ar - 1] : a.shape[ar - 2];
  const k = transA ? a.shape[ar - 2] : a.shape[ar - 1];
  const kb = transB ? b.shape[br - 1] : b.shape[br - 2];
  const n = transB ? b.shape[br - 2] : b.shape[br - 1];
  if (k !== kb) return null;
  const outerA = a.shape.slice(0, -2), outerB = b.shape.slice(0, -2);
  const batchA = outerA.reduce((x, y) => x * y, 1), batchB = outerB.reduce((x, y) => x * y, 1);
  let outer: number[];
  try {
    outer = tf.backend_util.assertAndGetBroadcastShape(outerA, outerB);
  } catch {
    return null;
  }
  const batch = outer.reduce((x, y) => x * y, 1);
  if (!(batchA === batch || batchA === 1) || !(batchB === batch || batchB === 1)) return null;
  return { batch, m, n, k, aStride: batchA === 1 ? 0 : m * k, bStride: batchB === 1 ? 0 : k * n, outShape: [...outer, m, n] };
}

type KernelArgs = Parameters<tf.KernelFunc>[0];

function run(args: KernelArgs, original: tf.KernelFunc, bias: tf.TensorInfo | undefined, relu: boolean): tf.TensorInfo | tf.TensorInfo[] {
  const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
  const { transposeA, transposeB } = args.attrs as { transposeA: boolean; transposeB: boolean };
  const p = enabled && addon ? productOf(a, b, transposeA, transposeB) : null;
  if (!p || (bias && (bias.dtype !== 'float32' || bias.shape.length > 2 || bias.shape[bias.shape.length - 1] !== p.n || tf.util.sizeFromShape(bias.shape) !== p.n))) {
    return original(args);
  }
  const backend = args.backend as unknown as WasmBackend;
  const out = backend.makeOutput(p.outShape, 'float32');
  // Views only after the allocation: a malloc can grow (and so detach) the heap.
  addon!.gemm(
    backend.typedArrayFromHeap(a),
    backend.typedArrayFromHeap(b),
    backend.typedArrayFromHeap(out),
    bias ? backend.typedArrayFromHeap(bias) : null,
    p.batch,
    p.m,
    p.n,
    p.k,
    transposeA,
    transposeB,
    p.aStride,
    p.bStride,
    relu,
  );
  return out;
}

let installed = false;

/**
 * Put the native products in place of the wasm backend's (once; call after the wasm backend is
 * registered). Returns the status; when the addon did not load nothing changes.
 */
export function installNativeKernels(): NativeStatus {
  const s = nativeStatus();
  if (!s.loaded || installed) return s;
  const batchMatMul = tf.getKernel('BatchMatMul', 'wasm');
  const fusedMatMul = tf.getKernel('_FusedMatMul', 'wasm');
  if (!batchMatMul || !fusedMatMul) return s;
  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel({ ...batchMatMul, kernelFunc: (args) => run(args, batchMatMul.kernelFunc, undefined, false) });
  tf.unregisterKernel('_FusedMatMul', 'wasm');
  tf.registerKernel({
    ...fusedMatMul,
    kernelFunc: (args) => {
      const { bias, preluActivationWeights } = args.inputs as { bias?: tf.TensorInfo; preluActivationWeights?: tf.TensorInfo };
      const activation = (args.attrs as { activation?: string }).activation ?? 'linear';
      if (preluActivationWeights || (activation !== 'linear' && activation !== 'relu')) return fusedMatMul.kernelFunc(args);
      return run(args, fusedMatMul.kernelFunc, bias, activation === 'relu');
    },
  });
  installed = true;
  return s;
}

/** True when the native products are installed and on (the model may use transposed products then). */
export function nativeProductsActive(): boolean {
  return installed && enabled && tf.getBackend() === 'wasm';
}

/** The native kernels beyond the products (attention, the decoders' rotary attention, RMSNorm and SwiGLU, LoRA's linear layer, GELU, layer norm, the decoding step, the sampler's token choice, Adam, the target log-probabilities, a linear layer's backward), when they are active; else null. */
export function nativeKernels(): Pick<
  NativeAddon,
  | 'attentionForward'
  | 'attentionBackward'
  | 'rotaryAttentionForward'
  | 'rotaryAttentionBackward'
  | 'rmsNormForward'
  | 'rmsNormBackward'
  | 'swigluForward'
  | 'swigluBackward'
  | 'loraLinearForward'
  | 'loraLinearBackward'
  | 'geluForward' | 'geluBackward' | 'decodeStep' | 'layerNormForward' | 'layerNormBackward' | 'adam' | 'sumSquares' | 'chooseTokens' | 'targetLogProbForward' | 'targetLogProbBackward' | 'columnSums' | 'gemm'
> | null {
  return nativeProductsActive() ? addon : null;
}

/**
 * Views of float32 tensors' data on the wasm heap, for native kernels that work in place (Adam).
 * Valid until the next allocation (which can grow, and so detach, the heap): call the kernel at once.
 */
export function heapViews(tensors: tf.Tensor[]): Float32Array[] {
  const backend = tf.backend() as unknown as WasmBackend;
  return tensors.map((t) => backend.typedArrayFromHeap(t) as Float32Array);
}
