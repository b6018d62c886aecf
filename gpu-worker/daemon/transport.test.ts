/**
 * The daemon's download of a blob to a file (a model's weights): streamed to disk with the
 * worker's credential, a refusal is an HttpStatusError, a server that stops sending is given up
 * on after the idle limit rather than held for ever, and a disk that refuses the file is not
 * mistaken for the network (no retry).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HttpStatusError, LocalWriteError, transient, WorkerTransport } from './transport';

const BODY = Buffer.alloc(3 * 2 ** 20, 7);
let server: http.Server;
let url: string;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'download-'));

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.headers.authorization !== 'Bearer wkr_test') return void res.writeHead(401).end('no such worker');
    if (req.url === '/whole') return void res.writeHead(200, { 'content-length': BODY.length }).end(BODY);
    // Sends a little, then nothing more (the connection stays open).
    if (req.url === '/stalls') return void res.writeHead(200, { 'content-length': BODY.length }).write(BODY.subarray(0, 1000));
    res.writeHead(404).end('No such blob for this worker');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
});

function transport(): WorkerTransport {
  const t = new WorkerTransport(url);
  t.credential = 'wkr_test';
  return t;
}

it('writes the body to the file and counts its bytes', async () => {
  const file = path.join(dir, 'whole.bin');
  expect(await transport().download('/whole', file)).toEqual({ bytes: BODY.length });
  expect(fs.readFileSync(file).equals(BODY)).toBe(true);
});

it('a refusal is an HttpStatusError with the status', async () => {
  const err = await transport().download('/missing', path.join(dir, 'missing.bin')).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(HttpStatusError);
  expect((err as HttpStatusError).status).toBe(404);
});

it('gives up on a server that stops sending', async () => {
  await expect(transport().download('/stalls', path.join(dir, 'stalls.bin'), 300)).rejects.toThrow(/no data for 0.3 s/);
});

it("a file this machine cannot write is its own failure, not retried as the network's", async () => {
  const err = await transport().download('/whole', path.join(dir, 'no-such-folder', 'x.bin')).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(LocalWriteError);
  expect((err as Error).message).toMatch(/cannot write .*x\.bin: ENOENT/);
  expect(transient(err)).toBe(false);
});
