import { EXIT } from '../errors';
import { age, bytes, table } from '../format';
import { call, type CommandContext } from './context';

export async function workersCommand(ctx: CommandContext): Promise<number> {
  const conn = await ctx.connect();
  const workers = await call(conn, () => conn.api.workers.list.query({ teamId: conn.teamId }));
  ctx.out.document({ workers });
  if (workers.length === 0) {
    ctx.out.line('no workers: start one with npm run worker -- --server URL --token wst_… (npm start runs a local one)');
    return EXIT.OK;
  }
  const now = new Date();
  const devices = (w: (typeof workers)[number]) => {
    if (w.devices.length === 0) return '-';
    const kinds = [...new Set(w.devices.map((d) => d.kind))].join('+');
    const memory = w.devices.reduce((sum, d) => sum + Number(d.memoryBytes), 0);
    return `${w.devices.length} ${kinds}${memory > 0 ? ` (${bytes(memory)})` : ''}`;
  };
  ctx.out.line(
    table(
      ['NAME', 'STATE', 'ONLINE', 'POOL', 'BACKEND', 'DEVICES', 'HEARTBEAT', 'ID'],
      workers.map((w) => [w.name, w.state, w.online ? 'yes' : 'no', w.pool, w.backend ?? '-', devices(w), `${age(w.lastHeartbeatAt, now)} ago`, w.id]),
    ),
  );
  return EXIT.OK;
}
