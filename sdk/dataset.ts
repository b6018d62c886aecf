import { type Json, type ObjectSchema, validateValue } from './environment/schema';

export interface DatasetProblem {
  /** 1-based line of the JSONL file. */
  line: number;
  message: string;
}

/**
 * Reads a JSONL dataset: one JSON object per non-empty line, each checked against the declared
 * row schema. Every bad line is reported (the first `maxProblems` of them, and how many in all in
 * `problemCount`), so a user fixes them in one pass.
 */
export function parseJsonlDataset(
  text: string,
  rowSchema: ObjectSchema,
  maxProblems = 20,
): { rows: Record<string, Json>[]; problems: DatasetProblem[]; problemCount: number } {
  const rows: Record<string, Json>[] = [];
  const problems: DatasetProblem[] = [];
  let problemCount = 0;
  const report = (found: DatasetProblem[]) => {
    problemCount += found.length;
    problems.push(...found.slice(0, Math.max(0, maxProblems - problems.length)));
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const source = lines[i].trim();
    if (source === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(source);
    } catch (e) {
      report([{ line: i + 1, message: `not JSON: ${(e as Error).message}` }]);
      continue;
    }
    const found = validateValue(rowSchema, value, 'row');
    if (found.length > 0) report(found.map((message) => ({ line: i + 1, message })));
    else rows.push(value as Record<string, Json>);
  }
  return { rows, problems, problemCount };
}
