/** `whetstone doctor` runs the worker's own check on this machine, with no server. */
import { describe, expect, it } from 'vitest';
import { runCapture } from '../../test-support/cli/test-io';

const env = (extra: Record<string, string>) => ({ ...process.env, WHETSTONE_BACKEND: 'wasm', ...extra });

describe('whetstone doctor', () => {
  it('names the backend, the kernel path and a measured matmul rate (and the wasm kernels when native ones are off)', async () => {
    const off = await runCapture(['doctor', '--json'], { env: env({ WHETSTONE_NATIVE: '0' }), cwd: process.cwd() });
    expect(off.code, off.stderr).toBe(0);
    expect(off.json()).toMatchObject({
      backend: 'wasm',
      kernels: 'native kernels off, using wasm kernels: turned off (WHETSTONE_NATIVE=0)',
      native: { loaded: false },
      threads: 1,
      matmulSize: 1024,
    });
    expect(off.json().matmulGflops).toBeGreaterThan(0);

    const text = await runCapture(['doctor'], { env: env({}), cwd: process.cwd() });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^backend +wasm \(wasm/m);
    expect(text.stdout).toMatch(/^kernels +native kernels/m);
    expect(text.stdout).toMatch(/^matmul +[\d.]+ GFLOP\/s \(1024³, float32\)$/m);
  });

  it('fails with exit 8 and the reason when no backend can load', async () => {
    const bad = await runCapture(['doctor'], { env: env({ WHETSTONE_BACKEND: 'tensorflow-gpu' }), cwd: process.cwd() });
    expect(bad.code).toBe(8);
    expect(bad.stderr).toMatch(/the worker's check failed/);
    expect(bad.stderr).toMatch(/tensorflow-gpu/);
  });

  it('takes no arguments', async () => {
    const r = await runCapture(['doctor', 'now'], { env: env({}), cwd: process.cwd() });
    expect(r.code).toBe(2);
  });
});
