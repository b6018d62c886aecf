/**
 * Generates the math template's dataset: two-digit additions and subtractions, split into train
 * and held-out sets with no problem in both. Deterministic: run `npx tsx env-templates/math/generate-dataset.ts`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Rng } from '../../sdk/environment/rng';

export interface GeneratedSplit {
  train: { question: string; answer: number }[];
  heldOut: { question: string; answer: number }[];
}

export function generateMathDataset(seed = 20260101, trainSize = 2000, heldOutSize = 200): GeneratedSplit {
  const rng = new Rng(seed);
  const all: { question: string; answer: number }[] = [];
  for (let a = 10; a < 100; a++) {
    for (let b = 10; b < 100; b++) {
      all.push({ question: `${a}+${b}`, answer: a + b });
      if (a >= b) all.push({ question: `${a}-${b}`, answer: a - b });
    }
  }
  const shuffled = rng.shuffle(all);
  return { heldOut: shuffled.slice(0, heldOutSize), train: shuffled.slice(heldOutSize, heldOutSize + trainSize) };
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
