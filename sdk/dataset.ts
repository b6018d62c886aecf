import { type Json, type ObjectSchema, validateValue } from './environment/schema';

export interface DatasetProblem {
  /** 1-based line of the JSONL file. */
  line: number;
  message: string;
}

/**
 * Reads a JSONL dataset: one JSON object per non-empty line, each checked against the declared
 * row schema. Every bad line is reported (up to `maxProblems`), so a user fixes them in one pass.
 */
export function parseJsonlDataset(
  text: string,
  rowSchema: ObjectSchema,
  maxProblems = 20,
): { rows: Record<string, Json>[]; problems: DatasetProblem[] } {
  const rows: Record<string, Json>[] = [];
  const problems: DatasetProblem[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length && problems.length < maxProblems; i++) {
    const source = lines[i].trim();
    if (source === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(source);
    } catch (e) {
      problems.push({ line: i + 1, message: `not JSON: ${(e as Error).message}` });
      continue;
    }
    const found = validateValue(rowSchema, value, 'row');
    if (found.length > 0) problems.push(...found.map((message) => ({ line: i + 1, message })));
    else rows.push(value as Record<string, Json>);
  }
  return { rows, problems: problems.slice(0, maxProblems) };
}
