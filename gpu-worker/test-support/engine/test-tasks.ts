/** Small verifiable tasks for the engine's tests and benchmarks. */
import { type Sequence } from '../../engine/batch';
import { Rng } from '../../engine/rng';
import { type Tokenizer } from '../../engine/tokenizer';

/** Every string of `length` characters over `alphabet`, in a seeded order. */
export function allStrings(alphabet: string, length: number, seed = 0): string[] {
  let out = [''];
  for (let i = 0; i < length; i++) out = out.flatMap((s) => Array.from(alphabet, (c) => s + c));
  return new Rng(seed).shuffle(out);
}

/** "<bos>abc=" → "cba<eos>", loss on the answer and EOS only. */
export function reversalExample(tok: Tokenizer, s: string): Sequence {
  const prompt = [tok.bos, ...tok.encode(`${s}=`)];
  const answer = [...tok.encode([...s].reverse().join('')), tok.eos];
  return { tokens: [...prompt, ...answer], lossMask: [...prompt.map(() => 0), ...answer.map(() => 1)] };
}

export function promptOf(tok: Tokenizer, s: string): number[] {
  return [tok.bos, ...tok.encode(`${s}=`)];
}
