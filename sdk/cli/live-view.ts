import type { CatalogueKey } from '../live';
import { duration, metricValue, progressBar } from './format';
import type { CliIO } from './io';
import type { JobDetail, LogItem, MetricItem } from './watch';

// What a watched job looks like while it runs. On a terminal: one status line redrawn in place
// (progress bar, reward, loss, state, elapsed) with state changes and log lines printed above it.
// Elsewhere (a pipe, CI): one line per state change and per step.

/** Shown beside the bar unless the command names others. */
const DEFAULT_KEYS: CatalogueKey[] = ['reward/mean', 'loss/total'];

export interface LiveViewOptions {
  /** Steps the job will run, when known. */
  total: number | null;
  /** Which log lines to show: all of them, or only warnings and errors. */
  logs: 'all' | 'problems' | 'none';
  /** Metrics shown beside the bar, in order. */
  keys?: string[];
}

export class LiveView {
  /** The highest step seen; steps count from 1, as the run's log and metrics number them (sdk/live.ts, stepNumber). 0: none yet. */
  private step = 0;
  private printedStep = 0;
  private state = '';
  private readonly latest = new Map<string, number>();
  private readonly started = Date.now();
  private drawn = false;
  private readonly keys: string[];

  constructor(private readonly io: CliIO, private readonly o: LiveViewOptions) {
    this.keys = o.keys ?? DEFAULT_KEYS;
  }

  /** The last value of every metric, at the highest step seen. */
  get lastMetrics(): Record<string, number> {
    return Object.fromEntries(this.latest);
  }

  get lastStep(): number {
    return this.step;
  }

  metrics(items: MetricItem[]): void {
    const steps = new Map<number, MetricItem[]>();
    for (const m of items) steps.set(m.step, [...(steps.get(m.step) ?? []), m]);
    for (const [step, list] of [...steps].sort((a, b) => a[0] - b[0])) {
      if (step < this.step) continue;
      this.step = step;
      for (const m of list) this.latest.set(m.key, m.value);
      if (!this.io.isTTY && step > this.printedStep && this.keys.some((k) => this.latest.has(k))) {
        this.printedStep = step;
        this.print(`step ${this.progressText()}  ${this.metricText()}`);
      }
    }
    this.redraw();
  }

  logs(items: LogItem[]): void {
    if (this.o.logs === 'none') return;
    for (const l of items) {
      if (this.o.logs === 'problems' && l.level !== 'warn' && l.level !== 'error') continue;
      this.print(`${l.level === 'info' ? '' : `${l.level}: `}${l.message}`);
    }
    this.redraw();
  }

  job(job: JobDetail): void {
    if (job.state !== this.state) {
      this.state = job.state;
      const why = job.state === 'QUEUED' && job.waitingReason ? ` (${job.waitingReason})` : job.state === 'FAILED' && job.failureReason ? `: ${job.failureReason}` : '';
      this.print(`${job.state.toLowerCase()}${why}`);
    }
    this.redraw();
  }

  connection(connected: boolean): void {
    if (!connected) this.print('lost the live connection; reconnecting (polling meanwhile)');
  }

  /** Clears the status line before the final report. */
  finish(): void {
    this.clear();
  }

  private progressText(): string {
    return this.o.total ? `${this.step}/${this.o.total}` : String(this.step);
  }

  private metricText(): string {
    return this.keys.filter((k) => this.latest.has(k)).map((k) => `${k} ${metricValue(this.latest.get(k))}`).join('  ');
  }

  private clear(): void {
    if (this.io.isTTY && this.drawn) this.io.stdout.write('\r\x1b[2K');
    this.drawn = false;
  }

  private print(line: string): void {
    this.clear();
    this.io.stdout.write(`${line}\n`);
  }

  private redraw(): void {
    if (!this.io.isTTY) return;
    const bar = progressBar(this.step, this.o.total);
    const status = [bar, this.metricText(), this.state.toLowerCase(), duration(Date.now() - this.started)].filter(Boolean).join('  ');
    this.io.stdout.write(`\r\x1b[2K${status}`);
    this.drawn = true;
  }
}
