/**
 * Generates the math template's dataset: every two-digit addition (00+00 … 99+99, operands
 * zero-padded), shuffled and split into train and held-out sets with no problem in both.
 * Deterministic: run `npx tsx env-templates/math/generate-dataset.ts`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Rng } from '../../sdk/environment/rng';

export interface MathProblem {
  question: string;
  answer: number;
}

export interface GeneratedSplit {
  train: MathProblem[];
  heldOut: MathProblem[];
}

const pad2 = (n: number) => String(n).padStart(2, '0');

export function generateMathDataset(seed = 20260101, heldOutSize = 500): GeneratedSplit {
  const all: MathProblem[] = [];
  for (let a = 0; a < 100; a++) for (let b = 0; b < 100; b++) all.push({ question: `${pad2(a)}+${pad2(b)}`, answer: a + b });
  const shuffled = new Rng(seed).shuffle(all);
  return { heldOut: shuffled.slice(0, heldOutSize), train: shuffled.slice(heldOutSize) };
}

export function toJsonl(rows: object[]): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dir = fileURLToPath(new URL('./data/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const { train, heldOut } = generateMathDataset();
  writeFileSync(`${dir}train.jsonl`, toJsonl(train));
  writeFileSync(`${dir}held-out.jsonl`, toJsonl(heldOut));
  console.log(`wrote ${train.length} train and ${heldOut.length} held-out rows to ${dir}`);
}
