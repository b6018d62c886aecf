import http from 'node:http';
import { createHTTPHandler } from '@trpc/server/adapters/standalone';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { publicProcedure, router } from './trpc';

// An unexpected error: the caller is told a request id and nothing else; the log has the id, the
// procedure and the stack.
const failing = router({ boom: publicProcedure.query(() => { throw new Error('the disk is on fire'); }) });
let server: http.Server;
let url = '';
beforeAll(async () => {
  server = http.createServer(createHTTPHandler({ router: failing, createContext: () => ({}) as never }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

test('a 500 names a request id that the server log shows with the stack', async () => {
  const logged: unknown[][] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => void logged.push(args);
  try {
    const res = await fetch(`${url}/boom`);
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: { json: { message: string } } };
    const id = /^Internal server error \(request ([0-9a-f]{8}); the server log has the details\)$/.exec(body.error.json.message)?.[1];
    expect(id).toBeTruthy();
    expect(JSON.stringify(body)).not.toMatch(/disk is on fire|trpc\.test/);
    expect(logged).toHaveLength(1);
    expect(String(logged[0][0])).toBe(`[trpc] request ${id} (boom) failed:`);
    expect((logged[0][1] as Error).stack).toMatch(/the disk is on fire[\s\S]*trpc\.test\.ts/);
  } finally {
    console.error = original;
  }
});
