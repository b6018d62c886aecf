import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAgentArgs, readToken, reportOf } from './provider-agent';

// The agent's pure parts; its polls against a real server and Slurm are gpu-worker/cluster/provider.test.ts.

describe('the provider agent', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-agent-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("reports Slurm's states in the protocol's terms, with squeue's reason", () => {
    const status = (state: string, reason: string, finished = false) => ({ jobId: '7', state, reason, finished });
    expect(reportOf('l', '7', status('PENDING', 'Resources'))).toEqual({ launchId: 'l', externalId: '7', state: 'PENDING', reason: 'Resources' });
    expect(reportOf('l', '7', status('RUNNING', 'None'))).toEqual({ launchId: 'l', externalId: '7', state: 'RUNNING', reason: 'RUNNING' });
    expect(reportOf('l', '7', status('COMPLETED', 'None', true))).toEqual({ launchId: 'l', externalId: '7', state: 'ENDED', reason: 'COMPLETED' });
    expect(reportOf('l', '7', status('TIMEOUT', 'TimeLimit', true))).toEqual({ launchId: 'l', externalId: '7', state: 'ENDED', reason: 'TIMEOUT: TimeLimit' });
    expect(reportOf('l', '7', status('CANCELLED', 'None', true)).state).toBe('CANCELLED');
    expect(reportOf('l', '7', undefined)).toEqual({ launchId: 'l', externalId: '7', state: 'ENDED', reason: 'no longer known to Slurm' });
  });

  it('takes its credential from the environment or a file only its owner reads, never from argv', () => {
    expect(readToken(undefined, { WHETSTONE_PROVIDER_TOKEN: 'wsp_abc' })).toBe('wsp_abc');
    expect(() => readToken(undefined, {})).toThrow(/WHETSTONE_PROVIDER_TOKEN or pass --token-file/);
    const file = path.join(dir, 'token');
    fs.writeFileSync(file, 'wsp_from_file\n', { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    expect(() => readToken(file, {})).toThrow(/mode 644.*chmod 600/);
    fs.chmodSync(file, 0o600);
    expect(readToken(file, {})).toBe('wsp_from_file');
    expect(parseAgentArgs(['--server', 'http://login:3000', '--token-file', file], {})).toEqual({ server: 'http://login:3000', tokenFile: file });
    expect(() => parseAgentArgs(['--token', 'wsp_abc'], {})).toThrow(/unknown argument "--token"/);
    const refused = (() => {
      try {
        parseAgentArgs(['--token=wsp_secret'], {});
        return '';
      } catch (e) {
        return (e as Error).message;
      }
    })();
    expect(refused).toMatch(/unknown argument "--token"/);
    expect(refused).not.toContain('wsp_secret');
    expect(() => parseAgentArgs(['--server', 'login:3000'], {})).toThrow(/not a URL/);
  });
});
