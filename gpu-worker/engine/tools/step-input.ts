// The training step the engine's tools and `bench:engine` time: random tokens after BOS, every
// position but the first trained, in the shape given as "layers,width,heads,ctx,batch".
import type { Rng } from '../rng';
import type { CharTokenizer } from '../tokenizer';

export interface StepShape {
  layers: number;
  width: number;
  heads: number;
  ctx: number;
  batch: number;
}

/** "L,d,H,ctx,batch" (the tools' first argument), the small model by default. */
export function stepShape(arg = '2,64,4,32,64'): StepShape {
  const [layers, width, heads, ctx, batch] = arg.split(',').map(Number);
  return { layers, width, heads, ctx, batch };
}

/** `batch` sequences of `ctx` tokens (BOS, then random non-special ones), loss on all but BOS. */
export function randomBatch(tok: CharTokenizer, rng: Rng, batch: number, ctx: number): Array<{ tokens: number[]; lossMask: number[] }> {
  return Array.from({ length: batch }, () => {
    const tokens = [tok.bos, ...Array.from({ length: ctx - 1 }, () => 8 + rng.int(tok.vocabSize - 8))];
    return { tokens, lossMask: tokens.map((_, i) => (i === 0 ? 0 : 1)) };
  });
}
