/** The wasm backend's Identity kernel replaced by one that shares memory (see `shareIdentityOnWasm`). */
import * as tf from '@tensorflow/tfjs';

let identityShared = false;

/**
 * On wasm, `clone` (the Identity kernel) shares the input's memory instead of copying it, as
 * Reshape does: tensors are immutable, and tfjs clones every tensor a custom gradient saves (62
 * copies a small training step, 1.5 ms of its ~16). The one kernel that writes into an input — a
 * decoding step appending to its preallocated KV cache (attention.ts, native-decode.ts) — writes
 * only into a cache made by PadV2 (fresh memory), which nothing clones.
 */
export function shareIdentityOnWasm(): void {
  if (identityShared) return;
  const original = tf.getKernel('Identity', 'wasm');
  if (!original) return;
  tf.unregisterKernel('Identity', 'wasm');
  tf.registerKernel({
    ...original,
    kernelFunc: (args) => {
      const { x } = args.inputs as { x: tf.TensorInfo };
      if (x.dtype === 'string') return original.kernelFunc(args);
      (args.backend as unknown as { incRef(dataId: object): void }).incRef(x.dataId);
      return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
    },
  });
  identityShared = true;
}
