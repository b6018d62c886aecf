// The training step the engine's tools and `bench:engine` time: random tokens after BOS, every
// position but the first trained, in the shape given as "layers,width,heads,ctx,batch".
import type { Sequence } from '../batch';
import type { Rng } from '../rng';
import type { CharTokenizer } from '../tokenizer';

interface StepShape {
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
export function randomBatch(tok: CharTokenizer, rng: Rng, batch: number, ctx: number): Sequence[] {
  return Array.from({ length: batch }, () => {
    const tokens = [tok.bos, ...Array.from({ length: ctx - 1 }, () => 8 + rng.int(tok.vocabSize - 8))];
    return { tokens, lossMask: tokens.map((_, i) => (i === 0 ? 0 : 1)) };
  });
}

/**
 * Wall and CPU milliseconds of each step of each arm: `warmup` untimed rounds, then `steps` timed
 * ones, every round running the arms in turn (so that alternated arms see the same machine load).
 */
export async function timeSteps(arms: Array<() => unknown>, steps: number, warmup: number): Promise<Array<{ wall: number[]; cpu: number[] }>> {
  const times = arms.map(() => ({ wall: [] as number[], cpu: [] as number[] }));
  for (let i = 0; i < warmup + steps; i++) {
    for (const [a, step] of arms.entries()) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await step();
      const wall = performance.now() - t0;
      const c = process.cpuUsage(c0);
      if (i < warmup) continue;
      times[a].wall.push(wall);
      times[a].cpu.push((c.user + c.system) / 1000);
    }
  }
  return times;
}

/** Minimum and median (the upper one for an even count) of a list of times, to 0.1 ms. */
export function minMedian(xs: number[]): { min: number; median: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { min: Number(s[0].toFixed(1)), median: Number(s[Math.floor(s.length / 2)].toFixed(1)) };
}
