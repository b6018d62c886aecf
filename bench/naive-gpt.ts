/**
 * The benchmark's baseline: the same GPT written plainly with tfjs autodiff, as a user would
 * write it — 3-D activations, tf.matMul with its own gradient (transposed and batched matmuls),
 * tf.train.adam with minimize. Embeddings use a one-hot matmul only because `gather` has no
 * gradient on wasm at all.
 */
import * as tf from '@tensorflow/tfjs';

export interface NaiveConfig {
  vocabSize: number;
  contextLength: number;
  layers: number;
  width: number;
  heads: number;
}

export class NaiveGPT {
  readonly vars: Record<string, tf.Variable> = {};
  readonly optimizer: tf.Optimizer;

  constructor(readonly c: NaiveConfig) {
    const d = c.width;
    const v = (name: string, shape: number[], init: 'normal' | 'ones' | 'zeros' = 'normal') => {
      const t = init === 'normal' ? tf.randomNormal(shape, 0, 0.02, 'float32', 1) : init === 'ones' ? tf.ones(shape) : tf.zeros(shape);
      this.vars[name] = tf.variable(t, true, `naive_${name}_${Math.random()}`);
      t.dispose();
    };
    v('wte', [c.vocabSize, d]);
    v('wpe', [c.contextLength, d]);
    for (let l = 0; l < c.layers; l++) {
      v(`ln1g${l}`, [d], 'ones');
      v(`ln1b${l}`, [d], 'zeros');
      for (const w of ['q', 'k', 'v', 'o']) v(`${w}${l}`, [d, d]);
      v(`ln2g${l}`, [d], 'ones');
      v(`ln2b${l}`, [d], 'zeros');
      v(`fc${l}`, [d, 4 * d]);
      v(`proj${l}`, [4 * d, d]);
    }
    v('lnfg', [d], 'ones');
    v('lnfb', [d], 'zeros');
    this.optimizer = tf.train.adam(1e-3);
  }

  private ln(x: tf.Tensor, g: tf.Tensor, b: tf.Tensor): tf.Tensor {
    const { mean, variance } = tf.moments(x, -1, true);
    return x.sub(mean).div(variance.add(1e-5).sqrt()).mul(g).add(b);
  }

  private dense(x: tf.Tensor3D, w: tf.Tensor): tf.Tensor3D {
    const [B, T, d] = x.shape;
    return x.reshape([B * T, d]).matMul(w as tf.Tensor2D).reshape([B, T, -1]);
  }

  logits(tokens: tf.Tensor2D): tf.Tensor3D {
    const c = this.c;
    const [B, T] = tokens.shape;
    const d = c.width;
    const hd = d / c.heads;
    const V = this.vars;
    let x = this.dense(tf.oneHot(tokens, c.vocabSize).toFloat() as tf.Tensor3D, V.wte).add(V.wpe.slice([0, 0], [T, d])) as tf.Tensor3D;
    const causal = tf.linalg.bandPart(tf.ones([T, T]), -1, 0).sub(1).mul(1e9);
    for (let l = 0; l < c.layers; l++) {
      const h = this.ln(x, V[`ln1g${l}`], V[`ln1b${l}`]) as tf.Tensor3D;
      const split = (t: tf.Tensor3D) => t.reshape([B, T, c.heads, hd]).transpose([0, 2, 1, 3]);
      const q = split(this.dense(h, V[`q${l}`]));
      const k = split(this.dense(h, V[`k${l}`]));
      const v = split(this.dense(h, V[`v${l}`]));
      const att = tf.softmax(tf.matMul(q, k, false, true).div(Math.sqrt(hd)).add(causal));
      const y = tf.matMul(att, v).transpose([0, 2, 1, 3]).reshape([B, T, d]) as tf.Tensor3D;
      x = x.add(this.dense(y, V[`o${l}`]));
      const h2 = this.ln(x, V[`ln2g${l}`], V[`ln2b${l}`]) as tf.Tensor3D;
      const a = this.dense(h2, V[`fc${l}`]);
      const gelu = a.mul(0.5).mul(tf.tanh(a.add(a.pow(3).mul(0.044715)).mul(Math.sqrt(2 / Math.PI))).add(1)) as tf.Tensor3D;
      x = x.add(this.dense(gelu, V[`proj${l}`]));
    }
    const hf = this.ln(x, V.lnfg, V.lnfb) as tf.Tensor3D;
    return this.dense(hf, V.wte.transpose());
  }

  /** One Adam step of next-token cross-entropy; returns the loss. */
  async trainStep(inputs: tf.Tensor2D, targets: tf.Tensor2D): Promise<number> {
    const loss = this.optimizer.minimize(() => {
      const logits = this.logits(inputs);
      return tf.losses.softmaxCrossEntropy(tf.oneHot(targets, this.c.vocabSize), logits) as tf.Scalar;
    }, true);
    const value = (await loss!.data())[0];
    loss!.dispose();
    return value;
  }
}
