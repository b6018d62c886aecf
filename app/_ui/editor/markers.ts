import type { DryRunReport, SourceLocation } from '../../../sdk/dry-run-report';

/** A problem to show in the editor at a file, line and column (1-based). */
export interface EditorProblem {
  file: string;
  line: number;
  column: number;
  message: string;
  severity: 'error' | 'warning';
  /** Where it came from, shown in the problems list: "compile", "type", "dry run", "test". */
  source: string;
}

/**
 * Every located problem of a save's report, as editor markers. A problem without a location is
 * put on the first line of the entry file, so nothing the server found is invisible.
 */
export function reportProblems(report: DryRunReport, entry: string): EditorProblem[] {
  const at = (location: SourceLocation | null | undefined) =>
    location ? { file: location.file.replace(/^\.?\//, ''), line: location.line, column: location.column } : { file: entry, line: 1, column: 1 };
  const problems: EditorProblem[] = [];
  for (const d of report.compileErrors) problems.push({ ...at(d.location), message: d.message, severity: 'error', source: 'compile' });
  for (const d of report.typeErrors ?? []) problems.push({ ...at(d.location), message: d.message, severity: 'error', source: 'type' });
  if (report.loadError) problems.push({ ...at(report.loadError.location), message: report.loadError.message, severity: 'error', source: 'load' });
  for (const e of report.errors) {
    const episodes = e.episodes ? ` (in ${e.episodes} episode${e.episodes === 1 ? '' : 's'} of the dry run)` : '';
    problems.push({ ...at(e.location), message: `${e.message}${episodes}`, severity: 'error', source: 'dry run' });
  }
  for (const t of report.tests ?? []) {
    if (t.pass) continue;
    problems.push({ ...at(t.error?.location ?? t.location), message: `test “${t.name}” failed: ${t.error?.message ?? t.failure ?? ''}`.trim(), severity: 'error', source: 'test' });
  }
  for (const w of report.warnings) problems.push({ ...at(null), message: w, severity: 'warning', source: 'dry run' });
  return problems;
}
