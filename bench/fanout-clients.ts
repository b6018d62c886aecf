/**
 * The fan-out bench's browser clients, spread over a few child processes
 * (bench/fanout-client-process.ts) the way real browsers are separate processes. The parent
 * sends commands over IPC and gets back what each process measured.
 */
import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type FleetCommand =
  | { type: 'open'; url: string; count: number; authorization?: string }
  | { type: 'join'; event: 'subscribe' | 'join'; room: string }
  | { type: 'clock' }
  | { type: 'measure'; on: boolean }
  | { type: 'arrivals' }
  | { type: 'echo'; perSecond: number; seconds: number }
  | { type: 'close' };

export type FleetReply =
  | { type: 'done' }
  | { type: 'clock'; now: number }
  | { type: 'arrivals'; latencies: Float64Array; first: Array<[number, number]> }
  | { type: 'echo'; rtts: Float64Array };

type ReplyOf<T extends FleetReply['type']> = Extract<FleetReply, { type: T }>;

const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fanout-client-process.ts');
const now = () => performance.timeOrigin + performance.now();

class ClientProcess {
  private next = 0;
  private readonly pending = new Map<number, { resolve: (r: FleetReply) => void; reject: (e: Error) => void }>();
  /** The child listens for commands (it says so once its script has loaded). */
  readonly ready: Promise<void>;
  constructor(readonly child: ChildProcess) {
    this.ready = new Promise((resolve) => child.once('message', () => resolve()));
    child.on('message', (m: { id: number; reply?: FleetReply; error?: string }) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(`fan-out client process: ${m.error}`));
      else p?.resolve(m.reply!);
    });
    child.on('exit', (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`fan-out client process exited (${code})`));
      this.pending.clear();
    });
  }
  send<T extends FleetReply['type']>(command: FleetCommand): Promise<ReplyOf<T>> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (r: FleetReply) => void, reject });
      this.child.send({ id, command });
    });
  }
}

export class ClientFleet {
  private constructor(private readonly processes: ClientProcess[]) {}

  /** `count` clients connected to `url`, split evenly over `processes` child processes. */
  static async open(url: string, count: number, processes: number, authorization?: string): Promise<ClientFleet> {
    const children = Array.from({ length: processes }, () => new ClientProcess(fork(script, [], { execArgv: ['--import', 'tsx'], serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })));
    const fleet = new ClientFleet(children);
    await Promise.all(children.map((c) => c.ready));
    await Promise.all(children.map((c, i) => c.send({ type: 'open', url, authorization, count: Math.floor(count / processes) + (i < count % processes ? 1 : 0) })));
    return fleet;
  }

  get size(): number {
    return this.processes.length;
  }

  private all<T extends FleetReply['type']>(command: (i: number) => FleetCommand): Promise<Array<ReplyOf<T>>> {
    return Promise.all(this.processes.map((p, i) => p.send<T>(command(i))));
  }

  join(event: 'subscribe' | 'join', room: string): Promise<unknown> {
    return this.all(() => ({ type: 'join', event, room }));
  }

  measure(on: boolean): Promise<unknown> {
    return this.all(() => ({ type: 'measure', on }));
  }

  /** Every item's latency at every client since measuring began, and per batch seq the first client's. */
  async arrivals(): Promise<{ latencies: number[]; first: number[] }> {
    const replies = await this.all<'arrivals'>(() => ({ type: 'arrivals' }));
    const first = new Map<number, number>();
    for (const r of replies) for (const [seq, ms] of r.first) first.set(seq, Math.min(ms, first.get(seq) ?? Infinity));
    return { latencies: replies.flatMap((r) => [...r.latencies]), first: [...first.values()] };
  }

  /** Round trips of `perSecond` echoes a second in all, spread over every client, for `seconds`. */
  async echo(perSecond: number, seconds: number): Promise<number[]> {
    const replies = await this.all<'echo'>(() => ({ type: 'echo', perSecond: perSecond / this.processes.length, seconds }));
    return replies.flatMap((r) => [...r.rtts]);
  }

  /**
   * How far each process's clock (timeOrigin + now()) is from this one's, in ms: of 20 IPC round
   * trips, the one that took least, assuming the reading was taken halfway. Latencies across
   * processes are only as good as this.
   */
  async clockOffsets(): Promise<number[]> {
    return Promise.all(
      this.processes.map(async (p) => {
        let best = { rtt: Infinity, offset: 0 };
        for (let i = 0; i < 20; i++) {
          const t0 = now();
          const { now: theirs } = await p.send<'clock'>({ type: 'clock' });
          const t1 = now();
          if (t1 - t0 < best.rtt) best = { rtt: t1 - t0, offset: theirs - (t0 + t1) / 2 };
        }
        return best.offset;
      }),
    );
  }

  async close(): Promise<void> {
    await this.all(() => ({ type: 'close' })).catch(() => undefined);
    for (const p of this.processes) p.child.disconnect();
  }
}
