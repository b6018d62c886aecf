import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TRPCClientError } from '@trpc/client';
import { describe, expect, it } from 'vitest';
import { HELP, parseCommandLine } from './args';
import { findCredentials, serverUrl } from './client';
import { readEnvironmentFolder } from './env-folder';
import { EXIT, toCliError, UsageError } from './errors';
import { age, progressBar, table } from './format';
import { LiveView } from './live-view';
import { runCapture } from '../test-support/cli/test-io';
import { validationProblems } from './validation';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const usage = (argv: string[]) => {
  try {
    parseCommandLine(argv);
  } catch (e) {
    if (e instanceof UsageError) return e.message;
    throw e;
  }
  throw new Error(`parsed: ${argv.join(' ')}`);
};

describe('parseCommandLine', () => {
  it('parses run with every option, global options anywhere', () => {
    expect(parseCommandLine(['--server', 'http://h:1', 'run', 'env-templates/bandit', '--algo', 'ppo', '--steps', '3', '--config', 'c.json', '--watch', '--json', '--priority', '2'])).toEqual({
      globals: { server: 'http://h:1', apiKey: undefined, team: undefined, json: true },
      command: { name: 'run', target: 'env-templates/bandit', algo: 'ppo', config: 'c.json', set: [], from: undefined, steps: 3, watch: true, priority: 2, dataset: undefined, logs: false, tags: [] },
    });
    expect(parseCommandLine(['run', 'x', '--algo=grpo', '-w', '--api-key', 'wsk_a']).command).toMatchObject({ name: 'run', algo: 'grpo', watch: true });
    expect(parseCommandLine(['run', 'x', '--algo=grpo', '--api-key', 'wsk_a']).globals.apiKey).toBe('wsk_a');
  });

  it('run takes --from (a base name or a checkpoint id) and --save-as (a base name, checked here)', () => {
    expect(parseCommandLine(['run', 'gomoku', '--from', 'gomoku-9x9-bc', '--save-as', 'gomoku-9x9-rl']).command).toMatchObject({ name: 'run', from: 'gomoku-9x9-bc', saveAs: 'gomoku-9x9-rl' });
    expect(parseCommandLine(['run', 'gomoku', '--from', 'cm0abc123']).command).toMatchObject({ from: 'cm0abc123', saveAs: undefined });
    expect(usage(['run', 'gomoku', '--save-as', 'My Base'])).toMatch(/^--save-as My Base: a base name is 1 to 63 lower-case letters/);
    expect(usage(['run', 'gomoku', '--save-as', 'a/b'])).toMatch(/--save-as a\/b: a base name/);
    expect(HELP).toContain('--save-as <base name>');
  });

  it('run takes --tag, repeated', () => {
    expect(parseCommandLine(['run', 'env-templates/bandit', '--tag', 'baseline', '--tag', 'lr:3e-4']).command).toMatchObject({ name: 'run', tags: ['baseline', 'lr:3e-4'] });
  });

  it('models import takes a folder or hf:owner/name[@revision]', () => {
    expect(parseCommandLine(['models', 'import', './tiny', '--name', 'x']).command).toEqual({ name: 'models-import', folder: './tiny', modelName: 'x' });
    expect(parseCommandLine(['models', 'import', 'hf:Qwen/Qwen2.5-0.5B-Instruct']).command).toEqual({ name: 'models-import-hub', repo: 'Qwen/Qwen2.5-0.5B-Instruct', revision: undefined, modelName: undefined });
    expect(parseCommandLine(['models', 'import', 'hf:a/b@refs/pr/3', '--name', 'b-pr']).command).toEqual({ name: 'models-import-hub', repo: 'a/b', revision: 'refs/pr/3', modelName: 'b-pr' });
    expect(usage(['models', 'import', 'hf:a'])).toMatch(/hf:owner\/name or hf:owner\/name@revision/);
    expect(usage(['models', 'import', 'hf:a/b@x@y'])).toMatch(/hf:owner\/name or hf:owner\/name@revision/);
    expect(usage(['models', 'import', 'hf:a/b@../main'])).toMatch(/is not a branch, tag or commit/);
  });

  it('parses the other commands', () => {
    expect(parseCommandLine(['jobs']).command).toEqual({ name: 'jobs', state: undefined, limit: 50, jobId: undefined, config: false });
    expect(parseCommandLine(['jobs', '--state', 'running', '--limit', '5']).command).toEqual({ name: 'jobs', state: 'RUNNING', limit: 5, jobId: undefined, config: false });
    expect(parseCommandLine(['logs', 'j1', '-f']).command).toEqual({ name: 'logs', jobId: 'j1', follow: true });
    expect(parseCommandLine(['cancel', 'j1']).command).toEqual({ name: 'cancel', jobId: 'j1' });
    expect(parseCommandLine(['secrets', 'list']).command).toEqual({ name: 'secrets-list' });
    expect(parseCommandLine(['env', 'create', 'g', '--http', 'http://127.0.0.1:8081', '--token-secret', 'GAME_TOKEN']).command).toMatchObject({ name: 'env-create', tokenSecret: 'GAME_TOKEN' });
    expect(() => parseCommandLine(['env', 'create', 'g', '--http', 'http://127.0.0.1:8081', '--token-secret', 'sk-live-abc'])).toThrow(/--token-secret sk-live-abc: the name of a team secret/);
    expect(parseCommandLine(['secrets', 'set', 'API_TOKEN', '--value-file', 't.txt']).command).toEqual({ name: 'secrets-set', secretName: 'API_TOKEN', valueFile: 't.txt' });
    expect(parseCommandLine(['secrets', 'delete', 'API_TOKEN']).command).toEqual({ name: 'secrets-delete', secretName: 'API_TOKEN' });
    expect(() => parseCommandLine(['secrets', 'set', 'api-token'])).toThrow(/secret name api-token: upper-case letters/);
    expect(() => parseCommandLine(['secrets', 'set'])).toThrow(/secrets needs a secret name/);
    expect(() => parseCommandLine(['secrets', 'show', 'A'])).toThrow(/secrets takes "list", "set NAME" or "delete NAME"/);
    expect(parseCommandLine(['workers', '--json']).command).toEqual({ name: 'workers' });
    expect(parseCommandLine(['eval', 'c1', '--against', 'random', '--games', '8']).command).toMatchObject({ name: 'eval', checkpointId: 'c1', against: 'random', games: 8, watch: true });
    expect(parseCommandLine(['eval', 'c1', '--against', 'c2', '--env', 'v1', '--no-watch']).command).toMatchObject({ against: { checkpointId: 'c2' }, games: 20, env: 'v1', watch: false });
    expect(parseCommandLine(['eval', 'c1', '--temperature', '0']).command).toMatchObject({ temperature: 0 });
    expect(parseCommandLine(['tournament', 'c1', 'c2', 'random', '--games', '4']).command).toEqual({ name: 'tournament', players: ['c1', 'c2', 'random'], games: 4, env: undefined, watch: true });
    expect(() => parseCommandLine(['tournament', 'c1'])).toThrow(/two players or more/);
    expect(() => parseCommandLine(['tournament', 'c1', 'c2', '--games', '0'])).toThrow(/--games must be a whole number from 1 to 1000/);
    expect(parseCommandLine(['eval', 'c1', '--temperature', '0.7']).command).toMatchObject({ temperature: 0.7 });
    expect(parseCommandLine(['eval', 'c1']).command).toMatchObject({ temperature: undefined });
    expect(parseCommandLine(['env', 'export', 'bandit', '--version', '3', '-o', 'b.wsenv']).command).toEqual({ name: 'env-export', environment: 'bandit', version: 3, output: 'b.wsenv' });
    expect(parseCommandLine(['env', 'create', 'ttt', '--http', 'http://h:1', '--agents', 'x, o', '--max-turns', '9']).command).toMatchObject({ name: 'env-create', kind: 'multi-agent', agents: ['x', 'o'], maxTurns: 9 });
    expect(() => parseCommandLine(['env', 'create', 'ttt', '--http', 'http://h:1', '--kind', 'multi-agent'])).toThrow('--kind multi-agent needs its agents in turn order: --agents x,o');
    expect(() => parseCommandLine(['env', 'create', 'ttt', '--http', 'http://h:1', '--kind', 'multi-turn', '--agents', 'x,o'])).toThrow('--agents goes with --kind multi-agent');
    expect(parseCommandLine(['env', 'import', 'b.wsenv', '--name', 'mine']).command).toEqual({ name: 'env-import', file: 'b.wsenv', environmentName: 'mine' });
    expect(() => parseCommandLine(['env', 'import'])).toThrow('env needs a package file');
    expect(() => parseCommandLine(['env', 'export', 'bandit', '--version', 'x'])).toThrow(/--version must be a whole number/);
    expect(parseCommandLine([]).command).toEqual({ name: 'help' });
    expect(parseCommandLine(['--help']).command).toEqual({ name: 'help' });
    expect(parseCommandLine(['run', '--help']).command).toEqual({ name: 'help', topic: 'run' });
    expect(parseCommandLine(['help', 'eval']).command).toEqual({ name: 'help', topic: 'eval' });
    expect(parseCommandLine(['--version']).command).toEqual({ name: 'version' });
  });

  it('refuses malformed command lines with a usage error', () => {
    expect(usage(['frobnicate'])).toBe('unknown command "frobnicate"');
    // Without --algo the manifest's algorithm is used; --set repeats, in order.
    expect(parseCommandLine(['run', 'x', '--set', 'clipHigh=0.3', '--set', 'model.width=32']).command).toMatchObject({ name: 'run', algo: undefined, set: ['clipHigh=0.3', 'model.width=32'] });
    expect(usage(['run', 'x', '--set', 'clipHigh'])).toBe('--set clipHigh: write key=value, e.g. --set clipHigh=0.3');
    expect(parseCommandLine(['jobs', 'j1', '--config']).command).toEqual({ name: 'jobs', jobId: 'j1', config: true, limit: 50, state: undefined });
    expect(usage(['jobs', '--config'])).toMatch(/whetstone jobs <job> --config/);
    expect(usage(['run', 'x', '--algo', 'dpo'])).toBe('--algo must be grpo, ppo or sft, not "dpo"');
    expect(usage(['run', '--algo', 'grpo'])).toBe('run needs an environment folder or id');
    expect(usage(['run', 'a', 'b', '--algo', 'grpo'])).toMatch(/takes one/);
    expect(usage(['run', 'x', '--algo', 'grpo', '--steps', '0'])).toMatch(/--steps must be a whole number/);
    expect(usage(['run', 'x', '--algo', 'grpo', '--steps', '2.5'])).toMatch(/--steps must be a whole number/);
    expect(usage(['run', 'x', '--algo', 'grpo', '--games', '3'])).toMatch(/Unknown option '--games'/);
    expect(usage(['jobs', '--state', 'LOST'])).toMatch(/--state must be one of/);
    expect(usage(['jobs', 'a', 'b'])).toMatch(/at most one job id/);
    expect(usage(['logs'])).toBe('logs needs a job id');
    expect(usage(['eval', 'c', '--games', 'many'])).toMatch(/--games must be/);
    expect(usage(['eval', 'c', '--temperature', 'hot'])).toMatch(/--temperature must be a number from 0 \(greedy\) to 5/);
    expect(usage(['--server', 'ftp://x', 'jobs'])).toMatch(/--server must be an http\(s\) URL/);
    expect(usage(['jobs', '--server'])).toMatch(/argument missing/);
  });
});

describe('main: exit codes without a server', () => {
  const env = { WHETSTONE_HOME: fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-empty-')) };
  const run = (argv: string[]) => runCapture(argv, { env, cwd: REPO });

  it('documents every exit code in --help', async () => {
    const res = await run(['--help']);
    expect(res.code).toBe(EXIT.OK);
    for (const code of Object.values(EXIT)) expect(HELP).toMatch(new RegExp(`^  ${code}\\s+\\S`, 'm'));
    expect(res.stdout).toBe(HELP);
    expect((await run(['help', 'logs'])).stdout).toMatch(/^usage: whetstone logs/);
  });

  it('usage errors are exit 2 on stderr, and a JSON document with --json', async () => {
    const res = await run(['frobnicate']);
    expect(res.code).toBe(EXIT.USAGE);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/^whetstone: unknown command "frobnicate"\n/);
    const json = await run(['jobs', '--json', '--limit', '0']);
    expect(json.code).toBe(EXIT.USAGE);
    expect(json.json()).toEqual({ error: { message: expect.stringMatching(/--limit/), details: [], exitCode: 2 } });
  });

  it('no credentials anywhere is exit 4; an unreadable --config is exit 2 before any request', async () => {
    const res = await run(['jobs']);
    expect(res.code).toBe(EXIT.UNAUTHORIZED);
    expect(res.stderr).toContain('no API key');
    expect((await run(['run', 'x', '--algo', 'grpo', '--config', '/no/such.json'])).code).toBe(EXIT.USAGE);
    expect((await run(['run', 'x', '--algo', 'sft'])).stderr).toMatch(/trains on a dataset:/);
  });
});

describe('client settings', () => {
  it('takes the server from the flag, then WHETSTONE_URL, then the default', () => {
    expect(serverUrl('http://a:1/', {})).toBe('http://a:1');
    expect(serverUrl(undefined, { WHETSTONE_URL: 'http://b:2' })).toBe('http://b:2');
    expect(serverUrl(undefined, {})).toBe('http://127.0.0.1:3000');
  });

  it('takes the key from the flag, then WHETSTONE_API_KEY, then the local credentials', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-home-'));
    expect(findCredentials(undefined, { WHETSTONE_HOME: home })).toBeNull();
    fs.writeFileSync(path.join(home, 'local-credentials.json'), JSON.stringify({ apiKey: 'wsk_local', teamId: 't1', workerToken: 'wst_x' }));
    expect(findCredentials(undefined, { WHETSTONE_HOME: home })).toMatchObject({ apiKey: 'wsk_local', teamId: 't1' });
    expect(findCredentials(undefined, { WHETSTONE_HOME: home, WHETSTONE_API_KEY: 'wsk_env' })).toEqual({ apiKey: 'wsk_env', source: { description: 'WHETSTONE_API_KEY' } });
    expect(findCredentials('wsk_flag', { WHETSTONE_API_KEY: 'wsk_env' })?.apiKey).toBe('wsk_flag');
    // Without WHETSTONE_HOME: the nearest .whetstone above the working directory, as git finds .git.
    const checkout = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-checkout-'));
    fs.mkdirSync(path.join(checkout, '.whetstone'));
    fs.mkdirSync(path.join(checkout, 'env-templates', 'bandit'), { recursive: true });
    fs.writeFileSync(path.join(checkout, '.whetstone', 'local-credentials.json'), JSON.stringify({ apiKey: 'wsk_found', teamId: 't2' }));
    expect(findCredentials(undefined, {}, path.join(checkout, 'env-templates', 'bandit'))).toMatchObject({ apiKey: 'wsk_found', teamId: 't2' });
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(checkout, { recursive: true, force: true });
  });
});

describe('errors', () => {
  const trpcError = (code: string, message: string) => {
    const e = new TRPCClientError(message);
    (e as unknown as { data: unknown }).data = { code };
    return e;
  };
  it('maps server answers to exit codes', () => {
    expect(toCliError(trpcError('UNAUTHORIZED', 'Sign in first'), 'u', null)).toMatchObject({ exitCode: EXIT.UNAUTHORIZED, message: 'the API key was refused' });
    expect(toCliError(trpcError('FORBIDDEN', 'no'), 'u', null).exitCode).toBe(EXIT.UNAUTHORIZED);
    expect(toCliError(trpcError('NOT_FOUND', 'No such job'), 'u', null)).toMatchObject({ exitCode: EXIT.NOT_FOUND, message: 'No such job' });
    expect(toCliError(trpcError('BAD_REQUEST', 'Invalid'), 'u', null).exitCode).toBe(EXIT.REJECTED);
    // The schema's issues line by line, not tRPC's JSON of them.
    const refusedInput = trpcError('BAD_REQUEST', '[{"code":"custom"}]');
    (refusedInput as unknown as { data: unknown }).data = { code: 'BAD_REQUEST', issues: [{ path: ['files'], message: 'at most 50 files' }, { path: [], message: 'odd' }] };
    expect(toCliError(refusedInput, 'u', null)).toMatchObject({ exitCode: EXIT.REJECTED, message: 'the server refused the request:', details: ['files: at most 50 files', '(input): odd'] });
    expect(toCliError(trpcError('TOO_MANY_REQUESTS', 'Not queued'), 'u', null).exitCode).toBe(EXIT.REJECTED);
    expect(toCliError(trpcError('INTERNAL_SERVER_ERROR', 'x'), 'u', null).exitCode).toBe(EXIT.SERVER_ERROR);
    const refused = new TRPCClientError('fetch failed', { cause: Object.assign(new Error('fetch failed'), { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) }) });
    expect(toCliError(refused, 'http://h:9', null)).toMatchObject({ exitCode: EXIT.UNREACHABLE, message: 'cannot reach Whetstone at http://h:9: is npm start running?', details: ['ECONNREFUSED'] });
  });
});

describe('formatting', () => {
  it('lays out tables, ages and progress bars', () => {
    expect(table(['ID', 'STATE'], [['a', 'RUNNING'], ['bbbb', 'QUEUED']])).toBe('ID    STATE\na     RUNNING\nbbbb  QUEUED');
    const now = new Date('2025-01-01T12:00:00Z');
    expect(age(new Date('2025-01-01T11:59:30Z'), now)).toBe('30s');
    expect(age(new Date('2025-01-01T09:00:00Z'), now)).toBe('3h');
    expect(age(new Date('2024-12-29T12:00:00Z'), now)).toBe('3d');
    expect(progressBar(3, 6, 10)).toBe('[█████░░░░░] 3/6');
    expect(progressBar(0, null, 4)).toBe('[····] 0');
  });

  it('prints dry-run problems as file:line:column relative to the working directory', () => {
    const report = {
      ok: false, compileErrors: [{ message: 'Unexpected ";"', location: { file: 'env.ts', line: 3, column: 17 }, lineText: '  const broken = ;' }],
      loadError: null, warnings: ['agents differ'], datasetProblems: [{ path: 'data/train.jsonl', line: 4, message: 'not JSON' }],
      errors: [{ kind: 'runtime', during: 'step', message: 'boom', location: { file: 'env.ts', line: 9, column: 5 }, userStack: '', episodes: 2 }], episodes: 8,
    } as unknown as Parameters<typeof validationProblems>[0];
    expect(validationProblems(report, '/w/envs/mine', '/w')).toEqual([
      'envs/mine/env.ts:3:17: error: Unexpected ";"', '      const broken = ;', '                    ^',
      'envs/mine/data/train.jsonl:4: not JSON',
      'envs/mine/env.ts:9:5: runtime during step: boom (2 of 8 episodes)',
      'warning: agents differ',
    ]);
  });

  it('the live view prints a line per step and state change when not on a terminal', () => {
    let out = '';
    const view = new LiveView({ stdout: { write: (s: string) => (out += s) }, stderr: { write: () => true }, env: {}, cwd: '/', isTTY: false }, { total: 3, logs: 'problems' });
    view.metrics([{ step: 1, key: 'reward/mean', value: 0.25 }, { step: 1, key: 'loss/total', value: 1.5 }, { step: 1, key: 'policy/kl', value: 0 }]);
    view.logs([{ id: '1', level: 'info', message: 'quiet', time: '' }, { id: '2', level: 'warn', message: 'loud', time: '' }]);
    view.metrics([{ step: 2, key: 'reward/mean', value: 0.5 }]);
    expect(out).toBe('step 1/3  reward/mean 0.250  loss/total 1.500\nwarn: loud\nstep 2/3  reward/mean 0.500  loss/total 1.500\n');
    expect(view.lastMetrics).toEqual({ 'reward/mean': 0.5, 'loss/total': 1.5, 'policy/kl': 0 });
  });
});

describe('environment folders', () => {
  it('reads a template folder as the server expects it (tests left out)', () => {
    const folder = readEnvironmentFolder('env-templates/math', REPO);
    expect(folder.manifest.name).toBe('math');
    expect(Object.keys(folder.files).every((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))).toBe(true);
    expect(folder.files[folder.manifest.entry]).toBeDefined();
    expect(folder.datasetText?.length).toBeGreaterThan(0);
  });

  it('names the problem with a folder that is not an environment', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-env-'));
    expect(() => readEnvironmentFolder(dir, '/')).toThrow(/has no manifest.json/);
    fs.writeFileSync(path.join(dir, 'manifest.json'), '{"name": "Bad Name"');
    expect(() => readEnvironmentFolder(dir, '/')).toThrow(/not valid JSON/);
    fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ name: 'ok', version: '1.0.0', kind: 'single-turn' }));
    expect(() => readEnvironmentFolder(dir, '/')).toThrow(/no .ts files/);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
