/**
 * Adam as WGSL kernels on the WebGPU backend. Profiled on an H200 (engine README), a WebGPU
 * training step is bound by dispatch, not by the GPU: tfjs records each kernel from JavaScript,
 * ~0.13 ms apiece, and the tensor-op Adam was ~14 kernels per parameter (about 400 of a small
 * step's 929). Here each parameter takes three (new m, new v, new parameter: a tfjs WebGPU program
 * writes one output), each one elementwise pass that reads p, g, m and v.
 */
import * as tf from '@tensorflow/tfjs';
import { type WebGPUBackend, type WebGPUProgram, webgpu_util } from '@tensorflow/tfjs-backend-webgpu';

interface AdamAttrs {
  scale: number;
  lr: number;
  beta1: number;
  beta2: number;
  bc1: number;
  bc2: number;
  epsilon: number;
  /** lr × weight decay for decayed parameters, else 0. */
  decay: number;
}

const OUTPUTS = ['m', 'v', 'p'] as const;

/** The same arithmetic as optim.ts's tensor-op path and its JavaScript kernel. */
function program(shape: number[], output: (typeof OUTPUTS)[number]): WebGPUProgram {
  const layout = webgpu_util.flatDispatchLayout(shape);
  const workgroupSize: [number, number, number] = [64, 1, 1];
  const result = output === 'm' ? 'm1' : output === 'v' ? 'v1' : 'p - (m1 / bc1 / (sqrt(v1 / bc2) + uniforms.epsilon) * uniforms.lr + p * uniforms.decay)';
  return {
    variableNames: ['P', 'G', 'M', 'V'],
    uniforms: 'scale : f32, lr : f32, beta1 : f32, beta2 : f32, bc1 : f32, bc2 : f32, epsilon : f32, decay : f32,',
    outputShape: shape,
    shaderKey: `whetstone_adam_${output}`,
    dispatchLayout: layout,
    dispatch: webgpu_util.computeDispatch(layout, shape, workgroupSize),
    workgroupSize,
    size: true,
    getUserCode: () => `
      fn main(index : i32) {
        if (index < uniforms.size) {
          let p = getPByOutputIndex(index);
          let g = getGByOutputIndex(index) * uniforms.scale;
          let m1 = getMByOutputIndex(index) * uniforms.beta1 + g * (1.0 - uniforms.beta1);
          let v1 = getVByOutputIndex(index) * uniforms.beta2 + g * g * (1.0 - uniforms.beta2);
          let bc1 = uniforms.bc1;
          let bc2 = uniforms.bc2;
          setOutputAtIndex(index, ${result});
        }
      }`,
  };
}

const KERNEL = 'WhetstoneAdamWebgpu';
let registered = false;

function register(): void {
  tf.registerKernel({
    kernelName: KERNEL,
    backendName: 'webgpu',
    kernelFunc: ({ inputs, attrs, backend }) => {
      const b = backend as unknown as WebGPUBackend;
      const { p, g, m, v } = inputs as Record<'p' | 'g' | 'm' | 'v', tf.TensorInfo>;
      const a = attrs as unknown as AdamAttrs;
      const uniforms = [a.scale, a.lr, a.beta1, a.beta2, a.bc1, a.bc2, a.epsilon, a.decay].map((x) => ({ type: 'float32' as const, data: [x] }));
      return OUTPUTS.map((o) => b.runWebGPUProgram(program(p.shape, o), [p, g, m, v], 'float32', uniforms));
    },
  });
  registered = true;
}

/** New [parameter, m, v] after one Adam update, on the WebGPU backend. */
export function webgpuAdam(p: tf.Tensor, g: tf.Tensor, m: tf.Tensor, v: tf.Tensor, attrs: AdamAttrs): [tf.Tensor, tf.Tensor, tf.Tensor] {
  if (!registered) register();
  const [m1, v1, p1] = tf.engine().runKernel(KERNEL, { p, g, m, v }, attrs as never) as unknown as tf.Tensor[];
  return [p1, m1, v1];
}
