/**
 * A dry-run process: the server's pool (server/environments/dry-run-pool.ts) starts it by path and
 * sends it one dry run at a time. User code runs here, never on the server's event loop; the pool
 * stops this process when a run outlasts its budget and starts another. After the dry run (and its
 * reward tests) the files are type-checked on a thread, never during the run, whose budget is the
 * environment's alone; the report without type errors goes to the pool first, so that a check
 * stopped for taking too long still leaves the dry run's answer. What crosses back is capped, so a
 * hostile environment cannot make the server hold a huge report.
 */
import type { DryRunProcessCommand, DryRunProcessMessage, DryRunReport } from '../../sdk/dry-run-report';
import { cutText } from './cut-text';
import { dryRun } from './dry-run';
import { TypeCheckThread } from './sandbox/type-check-thread';

/** Longest observation, action or log line a report carries back. */
const MAX_TEXT = 2_000;
/** Largest report, as JSON, the process sends; past it, transcripts and logs are left out. */
const MAX_REPORT_CHARS = 256_000;
/** A type check's own time (the thread's warm-up does not count); the pool's limit, a backstop, is longer. */
const TYPE_CHECK_MS = 8_000;

const types = new TypeCheckThread();

function send(message: DryRunProcessMessage): void {
  process.send?.(message);
}

const cut = (text: string) => cutText(text, MAX_TEXT);

/** The report with its free-form texts cut, and without transcripts and logs if it is still too large. */
export function capReport(report: DryRunReport): DryRunReport {
  const capped: DryRunReport = {
    ...report,
    logs: report.logs.map(cut),
    warnings: report.warnings.map(cut),
    errors: report.errors.map((e) => ({ ...e, message: cut(e.message), userStack: cut(e.userStack) })),
    transcripts: report.transcripts.map((t) => ({
      ...t,
      systemPrompts: Object.fromEntries(Object.entries(t.systemPrompts).map(([k, v]) => [k, cut(v)])),
      turns: t.turns.slice(0, 50).map((turn) => ({ ...turn, observation: cut(turn.observation), action: cut(turn.action) })),
    })),
    tests: report.tests.slice(0, 101).map((t) => ({
      ...t,
      name: cut(t.name),
      info: JSON.stringify(t.info).length <= MAX_TEXT ? t.info : { '(cut)': cut(JSON.stringify(t.info)) },
      failure: t.failure === null ? null : cut(t.failure),
      error: t.error && { ...t.error, message: cut(t.error.message), userStack: cut(t.error.userStack) },
    })),
    typeErrors: report.typeErrors.map((d) => ({ ...d, message: cut(d.message), lineText: cut(d.lineText) })),
  };
  if (JSON.stringify(capped).length <= MAX_REPORT_CHARS) return capped;
  return { ...capped, transcripts: [], logs: [`(transcripts and logs left out: the report was larger than ${MAX_REPORT_CHARS} characters)`] };
}

process.on('message', (command: DryRunProcessCommand) => {
  // Loading TypeScript costs seconds of CPU: done when the pool says the process is idle ahead of a first save.
  if (command.type === 'warm') return types.start();
  const { id, request } = command;
  void dryRun({ ...request, onProgress: (episodes, description) => send({ type: 'progress', id, episodes, description }) })
    .then(async (ran) => {
      const report = capReport(ran);
      // esbuild's syntax errors are the markers already; TypeScript would repeat them. An HTTP
      // environment's code is not run here (its servers are), so it has no type check either.
      if (report.compileErrors.length === 0 && !request.manifest.server) {
        send({ type: 'checking-types', id, report });
        const checked = await types.check(request.source, TYPE_CHECK_MS);
        if (checked.ok) Object.assign(report, capReport({ ...report, typeErrors: checked.result.typeErrors }), { typeCheckMs: checked.result.ms });
        else report.warnings.push(`${checked.why}: no type errors are shown`);
      }
      send({ type: 'report', id, report });
    })
    .catch((error: unknown) => {
      // Not the user's code failing (that is in the report): the runtime itself. The pool replaces this process.
      console.error('[dry-run]', error);
      process.exit(1);
    });
});
// Ends with the server, however the server ends.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
