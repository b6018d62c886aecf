/**
 * Generates the math-tools dataset: three-digit multiplications, train and held-out splits with no
 * problem in both. Deterministic: run `npx tsx env-templates/math-tools/generate-dataset.ts`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Rng } from '../../sdk/environment/rng';

export function generateToolMathDataset(seed = 20260102, trainSize = 1000, heldOutSize = 100) {
  const rng = new Rng(seed);
  const seen = new Set<string>();
  const rows: { question: string; answer: number }[] = [];
  while (rows.length < trainSize + heldOutSize) {
    const a = rng.int(100, 1000);
    const b = rng.int(100, 1000);
    const key = `${Math.min(a, b)}*${Math.max(a, b)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rows.push({ question: `What is ${a} * ${b}?`, answer: a * b });
  }
  return { heldOut: rows.slice(0, heldOutSize), train: rows.slice(heldOutSize) };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dir = fileURLToPath(new URL('./data/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const { train, heldOut } = generateToolMathDataset();
  const jsonl = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
  writeFileSync(`${dir}train.jsonl`, jsonl(train));
  writeFileSync(`${dir}held-out.jsonl`, jsonl(heldOut));
  console.log(`wrote ${train.length} train and ${heldOut.length} held-out rows to ${dir}`);
}
