/**
 * Custom kernels written in JavaScript over the backend's own memory, for the two backends whose
 * tensors live in this process: wasm (views into the wasm heap, no copy) and cpu (typed arrays).
 * On wasm every kernel launch costs 10–50 µs of dispatch and each small elementwise op is its own
 * pass over memory, so one JavaScript pass that does the work of ten kernels is faster whenever it
 * needs no transcendental functions (V8's Math.exp is ~10× slower than wasm's SIMD kernels).
 * Native backends never use these: callers check `hasJsKernels()` and keep plain ops there.
 * On wasm most of them hand the work to hand-written SIMD modules (wasm/*.wat, `simdModule`) that
 * run over the same heap: a SIMD loop is ~10× faster than JavaScript over typed arrays.
 */
import * as tf from '@tensorflow/tfjs';
import { useFastMatmulPath } from './backend';

type Data = Float32Array | Int32Array;

export interface JsKernel {
  name: string;
  /** Shapes of the float32 outputs, from the input shapes and attributes. */
  outputShapes(inputShapes: number[][], attrs: Record<string, unknown>): number[][];
  /**
   * Fill every element of `outputs` (they start uninitialised) from `inputs`. Must not write
   * into inputs, and must not keep the arrays: on wasm they are views of a heap that can move.
   * On wasm, `heap` is the backend's memory, so that a kernel can hand the views' byte offsets to
   * a wasm module of its own (decode attention does).
   */
  compute(inputs: Data[], outputs: Float32Array[], inputShapes: number[][], attrs: Record<string, unknown>, heap?: WebAssembly.Memory): void;
}

interface WasmBackend {
  makeOutput(shape: number[], dtype: 'float32'): tf.TensorInfo;
  typedArrayFromHeap(t: tf.TensorInfo): Data;
  /** The emscripten module; `asm.memory` is its heap in tfjs-backend-wasm 4.x. */
  wasm?: { asm?: { memory?: unknown } };
}

interface CpuBackend {
  makeTensorInfo(shape: number[], dtype: 'float32', values: Float32Array): tf.TensorInfo;
  data: { get(dataId: object): { values: Data } };
}

const sizeOf = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

/** The wasm backend's heap, when its module exposes one. */
function heapOf(b: WasmBackend): WebAssembly.Memory | undefined {
  const heap = b.wasm?.asm?.memory;
  return heap instanceof WebAssembly.Memory ? heap : undefined;
}

function register(k: JsKernel): void {
  tf.registerKernel({
    kernelName: k.name,
    backendName: 'wasm',
    kernelFunc: ({ inputs, attrs, backend }) => {
      const b = backend as unknown as WasmBackend;
      const ins = Object.values(inputs) as tf.TensorInfo[];
      const shapes = ins.map((t) => t.shape);
      const outs = k.outputShapes(shapes, attrs as Record<string, unknown>).map((s) => b.makeOutput(s, 'float32'));
      // Views only after every allocation: a malloc can grow (and so detach) the heap.
      const inViews = ins.map((t) => b.typedArrayFromHeap(t));
      const outViews = outs.map((t) => b.typedArrayFromHeap(t) as Float32Array);
      k.compute(inViews, outViews, shapes, attrs as Record<string, unknown>, heapOf(b));
      return outs;
    },
  });
  tf.registerKernel({
    kernelName: k.name,
    backendName: 'cpu',
    kernelFunc: ({ inputs, attrs, backend }) => {
      const b = backend as unknown as CpuBackend;
      const ins = Object.values(inputs) as tf.TensorInfo[];
      const shapes = ins.map((t) => t.shape);
      const outShapes = k.outputShapes(shapes, attrs as Record<string, unknown>);
      const outViews = outShapes.map((s) => new Float32Array(sizeOf(s)));
      k.compute(ins.map((t) => b.data.get(t.dataId).values), outViews, shapes, attrs as Record<string, unknown>);
      return outShapes.map((s, i) => b.makeTensorInfo(s, 'float32', outViews[i]));
    },
  });
}

const kernels = new Map<string, JsKernel>();

/** Declare a kernel; it is registered with tfjs on first use. */
export function defineJsKernel(k: JsKernel): JsKernel {
  kernels.set(k.name, k);
  return k;
}

const registered = new Set<string>();

let disabled = false;

/** Turn the JavaScript kernels off (tests compare them with the plain-op paths). */
export function setJsKernelsEnabled(enabled: boolean): void {
  disabled = !enabled;
}

/** True when the current backend keeps tensors in this process (wasm, cpu) and kernels are on. */
export function hasJsKernels(): boolean {
  const b = tf.getBackend();
  return !disabled && (b === 'wasm' || b === 'cpu');
}

/** The model's fused ops: JS kernels available and the fast path on (tests switch it to 'plain'). */
export function useFusedKernels(): boolean {
  return hasJsKernels() && useFastMatmulPath();
}

/**
 * True while a gradient tape records (inside tf.grads / variableGrads). The custom-gradient ops
 * run their forward as plain kernels otherwise: sampling records nothing, and customGrad's
 * bookkeeping (closures, a scope per op) was a visible share of a decoding step's ~60 kernels.
 */
export function recordingGradients(): boolean {
  return tf.engine().isTapeOn();
}

/*
 * Saving for a custom gradient without tfjs's copy. tfjs's `save` clones every tensor it saves, and
 * on wasm a clone is a copy (the Identity kernel): 62 copies a step of the small model, ~10% of its
 * time. Inside `sweepingSaves` (optim.ts's `gradients`) the fused ops keep the tensors themselves
 * instead (tf.keep, so that the forward's tidy spares them) and the sweep disposes them when the
 * gradient computation ends, as tfjs disposes its saved clones then. Elsewhere (a test's tf.grads)
 * they save as usual.
 */
let sweepDepth = 0;
const kept: tf.Tensor[] = [];
/** Tensors with ids above this were made during the current sweep (ids only grow). */
let sweepStart = 0;

/**
 * Run a gradient computation (`fn` calls tf.variableGrads or tf.grads) during which the fused ops
 * save tensors without copying them; disposes what they kept when it ends, thrown or not.
 */
export function sweepingSaves<T>(fn: () => T): T {
  if (sweepDepth++ === 0) tf.tidy(() => void (sweepStart = tf.scalar(0).id));
  try {
    return fn();
  } finally {
    if (--sweepDepth === 0) kept.splice(0).forEach((t) => t.dispose());
  }
}

/**
 * Save `tensors` for a custom gradient (see `sweepingSaves`): returns the function that gives them
 * back in the gradient function, from the `saved` list tfjs passes it.
 */
export function saveForGradient(save: tf.GradSaveFunc, tensors: tf.Tensor[]): (saved: tf.Tensor[]) => tf.Tensor[] {
  if (sweepDepth === 0) {
    save(tensors);
    return (saved) => saved;
  }
  save([]);
  for (const t of tensors) {
    // Only what the differentiated function made: tensors from before it (variables, the caller's
    // inputs) outlive it already, and are not the sweep's to dispose; nor are those kept already.
    if (t.id > sweepStart && !t.kept) kept.push(tf.keep(t));
  }
  return () => tensors;
}

/** The wasm backend's heap when it is the current backend (and JS kernels are on), else undefined. */
export function wasmHeap(): WebAssembly.Memory | undefined {
  if (disabled || tf.getBackend() !== 'wasm') return undefined;
  return heapOf(tf.backend() as unknown as WasmBackend);
}

const simdModules = new WeakMap<WebAssembly.Memory, Map<string, unknown>>();

/**
 * A hand-written SIMD module (wasm/NAME.wat, assembled into `base64`) instantiated over `heap`, so
 * that its functions take tensors' byte offsets. Without a heap (none given, or undefined as a
 * kernel gets on cpu) it uses `wasmHeap()`. Null when there is none (another backend, or JS kernels
 * off) or the module cannot load (e.g. no SIMD): callers then fall back to JavaScript or plain ops.
 */
export function simdModule<T>(base64: string, heap: WebAssembly.Memory | undefined = wasmHeap()): T | null {
  if (!heap) return null;
  let byModule = simdModules.get(heap);
  if (!byModule) simdModules.set(heap, (byModule = new Map()));
  if (!byModule.has(base64)) {
    try {
      const module = new WebAssembly.Module(Buffer.from(base64, 'base64'));
      byModule.set(base64, new WebAssembly.Instance(module, { env: { memory: heap } }).exports);
    } catch {
      byModule.set(base64, null);
    }
  }
  return byModule.get(base64) as T | null;
}

/** `simdModule` for kernels that have no fallback (their callers check first): throws where it is null. */
export function requireSimdModule<T>(base64: string, heap: WebAssembly.Memory | undefined, kernel: string): T {
  const m = simdModule<T>(base64, heap);
  if (!m) throw new Error(`${kernel} runs only on wasm with SIMD (its caller checks before running it)`);
  return m;
}

/** Run a kernel declared with `defineJsKernel` (not recorded for autodiff: wrap in customGrad). */
export function runJsKernel(k: JsKernel, inputs: tf.Tensor[], attrs: Record<string, unknown> = {}): tf.Tensor[] {
  if (!registered.has(k.name)) {
    register(k);
    registered.add(k.name);
  }
  const named: Record<string, tf.Tensor> = {};
  inputs.forEach((t, i) => (named[`x${i}`] = t));
  return tf.engine().runKernel(k.name, named, attrs as never) as unknown as tf.Tensor[];
}
