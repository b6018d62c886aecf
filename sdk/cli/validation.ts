import path from 'node:path';
import type { DryRunReport, SourceLocation } from '../dry-run-report';

// A failed dry run as compiler-style lines, `file:line:column: message`, with paths relative to
// the working directory so that terminals and editors can jump to them.

function where(location: SourceLocation | null, dir: string | null, cwd: string): string {
  if (!location) return '';
  const file = dir ? path.relative(cwd, path.join(dir, location.file)) || location.file : location.file;
  return `${file}:${location.line}:${location.column}: `;
}

/** The problems of a dry-run report, one or two lines each; empty when it passed. */
export function validationProblems(report: DryRunReport, dir: string | null, cwd: string): string[] {
  const lines: string[] = [];
  for (const d of report.compileErrors) {
    lines.push(`${where(d.location, dir, cwd)}error: ${d.message}`);
    if (d.lineText && d.location) lines.push(`    ${d.lineText}`, `    ${' '.repeat(Math.max(0, d.location.column - 1))}^`);
  }
  if (report.loadError) lines.push(`${where(report.loadError.location, dir, cwd)}error while loading: ${report.loadError.message}`);
  for (const p of report.datasetProblems) {
    const file = dir ? path.relative(cwd, path.join(dir, p.path)) : p.path;
    lines.push(`${file}:${p.line}: ${p.message}`);
  }
  for (const e of report.errors) {
    lines.push(`${where(e.location, dir, cwd)}${e.kind} during ${e.during}: ${e.message} (${e.episodes} of ${report.episodes} episodes)`);
  }
  for (const w of report.warnings) lines.push(`warning: ${w}`);
  return lines;
}

/** One line about a passing report: episodes played and the reward spread. */
export function validationSummary(report: DryRunReport): string {
  const rewards = Object.entries(report.rewards)
    .map(([agent, d]) => `${agent} reward ${d.mean.toFixed(3)} ± ${d.std.toFixed(3)}`)
    .join(', ');
  // (Reports stored before reward tests and type checks existed have neither field.)
  const tests = report.tests ?? [];
  const passed = tests.filter((t) => t.pass).length;
  const typeErrors = report.typeErrors?.length ?? 0;
  const extra = `${tests.length > 0 ? `; reward tests: ${passed} of ${tests.length} passed` : ''}${typeErrors > 0 ? `; ${typeErrors} type error${typeErrors === 1 ? '' : 's'}` : ''}`;
  return `dry run: ${report.episodes} episodes in ${report.durationMs} ms${rewards ? `, ${rewards}` : ''}${extra}`;
}
