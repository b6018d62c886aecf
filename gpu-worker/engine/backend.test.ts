import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { backendReport, initBackend } from './backend';

describe('backend choice', () => {
  it('auto falls through the optional native packages and reports devices', async () => {
    const report = await initBackend('auto');
    expect(['tensorflow-gpu', 'webgpu', 'tensorflow', 'wasm', 'cpu']).toContain(report.backend);
    expect(report.devices.length).toBeGreaterThan(0);
    expect(report.devices[0].memoryBytes).toBeGreaterThan(0);
    if (report.backend === 'wasm') {
      // Neither native package is a dependency, so on this machine both are skipped with a reason.
      expect(report.skipped.join('\n')).toMatch(/tfjs-node-gpu/);
      expect(report.devices[0].kind).toBe('wasm');
      expect(report.fastMatmulPath).toBe(true);
    }
    expect(backendReport()).toEqual(report);
  });

  it('loads cpu and wasm on request, and names the variable on a bad value', async () => {
    expect((await initBackend('cpu')).tfjsBackend).toBe('cpu');
    expect(tf.getBackend()).toBe('cpu');
    const wasm = await initBackend('wasm');
    expect(wasm.simd).toBe(true);
    expect(tf.getBackend()).toBe('wasm');
    await expect(initBackend('gpu-please')).rejects.toThrow(/WHETSTONE_BACKEND/);
  });
});
