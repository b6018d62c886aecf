import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { HttpEnvironmentAnswers } from '../http-manifest';
import { baseNameSchema } from '../job-config';
import { secretNameSchema } from '../team-secrets';
import { EXPORT_FORMATS, type ExportFormat, hubRepoSchema, hubRevisionSchema, modelNameSchema } from '../models';
import { UsageError } from './errors';

// The command line: `whetstone [global options] <command> [arguments] [options]`. Global options
// may stand anywhere. Parsing is pure (no I/O) so that every rule is unit-tested.

export const JOB_STATES = ['QUEUED', 'ASSIGNED', 'RUNNING', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type JobStateName = (typeof JOB_STATES)[number];
export type Algorithm = 'grpo' | 'ppo' | 'sft';
export type Against = 'bot' | 'random' | { checkpointId: string };

export interface GlobalOptions {
  server?: string;
  apiKey?: string;
  team?: string;
  json: boolean;
}

export type Command =
  | { name: 'help'; topic?: string }
  | { name: 'version' }
  | {
      name: 'run';
      target: string;
      /** Without it, the manifest's training.algorithm. */
      algo?: Algorithm;
      /** A JSON job config: a file's path, or the JSON itself. */
      config?: string;
      /** Training options as `key=value`, applied over --config in order (`--set clipHigh=0.3`). */
      set: string[];
      /** Start from this checkpoint's weights (config.baseCheckpointId): a base's name or a checkpoint id. */
      from?: string;
      /** Start from this imported pretrained model (config.baseModelId): its name or id. */
      model?: string;
      /** On success, save the run's newest sampler checkpoint as the team's base of this name (config.saveAs). */
      saveAs?: string;
      steps?: number;
      watch: boolean;
      priority?: number;
      dataset?: string;
      logs: boolean;
      /** Tags to find the run by (`--tag baseline --tag lr-sweep`). */
      tags: string[];
    }
  | { name: 'jobs'; state?: JobStateName; limit: number; jobId?: string; config: boolean }
  | { name: 'logs'; jobId: string; follow: boolean }
  | { name: 'cancel'; jobId: string }
  | { name: 'eval'; checkpointId: string; against: Against; games: number; env?: string; watch: boolean; priority?: number; temperature?: number }
  | { name: 'tournament'; players: string[]; games: number; env?: string; watch: boolean }
  | { name: 'workers' }
  | { name: 'doctor' }
  | { name: 'provider'; kind: 'slurm'; tokenFile?: string }
  | { name: 'provider-list'; shared: boolean }
  | { name: 'provider-create'; providerName: string; settingsFile: string; shared: boolean }
  | { name: 'provider-update'; provider: string; settingsFile: string; shared: boolean }
  | { name: 'provider-delete'; provider: string; shared: boolean }
  | { name: 'datasets' }
  | { name: 'datasets-upload'; file: string; datasetName?: string }
  | { name: 'secrets-list' }
  | { name: 'models-list' }
  | { name: 'models-import'; folder: string; modelName?: string }
  /** A checkpoint of an imported model into a Hugging Face folder. */
  | { name: 'models-export'; checkpointId: string; folder: string; format: ExportFormat }
  /** One completion from a model or checkpoint, through an inference session. */
  | { name: 'sample'; target: string; prompt: string; chat: boolean; system?: string; temperature: number; topP?: number; maxTokens: number; seed?: number; idleSeconds: number }
  | { name: 'models-import-hub'; repo: string; revision?: string; modelName?: string }
  | { name: 'secrets-set'; secretName: string; valueFile?: string }
  | { name: 'secrets-delete'; secretName: string }
  | ({
      name: 'env-create';
      environmentName: string;
      /** A JSONL file of the rows each episode's /reset is sent (a data-dependent game). */
      dataset?: string;
    } & Omit<HttpEnvironmentAnswers, 'name' | 'datasetFile'>)
  /** An environment version as a package file (stdout without --output). */
  | { name: 'env-export'; environment: string; version?: number; output?: string }
  /** A package file into the team (under --name instead of its own). */
  | { name: 'env-import'; file: string; environmentName?: string };

export interface CommandLine {
  globals: GlobalOptions;
  command: Command;
}

type Options = NonNullable<ParseArgsConfig['options']>;

const GLOBAL_OPTIONS: Options = {
  server: { type: 'string' },
  'api-key': { type: 'string' },
  team: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
};

const COMMAND_OPTIONS: Record<string, Options> = {
  run: {
    algo: { type: 'string' },
    config: { type: 'string' },
    set: { type: 'string', multiple: true },
    from: { type: 'string' },
    model: { type: 'string' },
    'save-as': { type: 'string' },
    steps: { type: 'string' },
    watch: { type: 'boolean', short: 'w' },
    priority: { type: 'string' },
    dataset: { type: 'string' },
    logs: { type: 'boolean' },
    tag: { type: 'string', multiple: true },
  },
  jobs: { state: { type: 'string' }, limit: { type: 'string' }, config: { type: 'boolean' } },
  logs: { follow: { type: 'boolean', short: 'f' } },
  cancel: {},
  eval: {
    against: { type: 'string' },
    games: { type: 'string' },
    env: { type: 'string' },
    'no-watch': { type: 'boolean' },
    priority: { type: 'string' },
    temperature: { type: 'string' },
  },
  tournament: { games: { type: 'string' }, env: { type: 'string' }, 'no-watch': { type: 'boolean' } },
  workers: {},
  doctor: {},
  provider: { 'token-file': { type: 'string' }, settings: { type: 'string' }, shared: { type: 'boolean' } },
  datasets: { name: { type: 'string' } },
  secrets: { 'value-file': { type: 'string' } },
  models: { name: { type: 'string' }, format: { type: 'string' } },
  sample: {
    prompt: { type: 'string' },
    chat: { type: 'boolean' },
    system: { type: 'string' },
    greedy: { type: 'boolean' },
    temperature: { type: 'string' },
    'top-p': { type: 'string' },
    'max-tokens': { type: 'string' },
    seed: { type: 'string' },
    idle: { type: 'string' },
  },
  env: {
    http: { type: 'string', multiple: true },
    kind: { type: 'string' },
    'max-turns': { type: 'string' },
    'max-tokens': { type: 'string' },
    timeout: { type: 'string' },
    'prompt-field': { type: 'string' },
    'token-secret': { type: 'string' },
    dataset: { type: 'string' },
    agents: { type: 'string' },
    version: { type: 'string' },
    output: { type: 'string', short: 'o' },
    name: { type: 'string' },
  },
  help: {},
};

const COMMANDS = Object.keys(COMMAND_OPTIONS).filter((c) => c !== 'help');

function positiveInt(name: string, value: string | undefined, max = 1_000_000): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) throw new UsageError(`--${name} must be a whole number from 1 to ${max}, not "${value}"`);
  return Number(value);
}

function nonNegativeInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number, not "${value}"`);
  return Number(value);
}

function temperatureOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+(\.\d+)?$/.test(value) || Number(value) > 5) throw new UsageError(`--temperature must be a number from 0 (greedy) to 5, not "${value}"`);
  return Number(value);
}

function baseNameOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const parsed = baseNameSchema.safeParse(value);
  if (!parsed.success) throw new UsageError(`--save-as ${value}: ${parsed.error.issues[0].message}`);
  return parsed.data;
}

function one(positionals: string[], what: string, command: string): string {
  if (positionals.length === 0) throw new UsageError(`${command} needs ${what}`, [`usage: ${USAGE[command]}`]);
  if (positionals.length > 1) throw new UsageError(`${command} takes one ${what}, got ${positionals.length}: ${positionals.join(' ')}`);
  return positionals[0];
}

export const USAGE: Record<string, string> = {
  run: 'whetstone run <env folder | environment id | name> [--algo grpo|ppo|sft] [--config file.json | JSON] [--set key=value]… [--from <base name | checkpoint id>] [--model <imported model name | id>] [--save-as <base name>] [--steps N] [--priority N] [--dataset <dataset version id | file.jsonl>] [--tag word]… [--watch] [--logs]',
  jobs: 'whetstone jobs [--state QUEUED|RUNNING|…] [--limit N] | whetstone jobs <job> [--config]',
  logs: 'whetstone logs <job id> [--follow]',
  cancel: 'whetstone cancel <job id>',
  eval: 'whetstone eval <checkpoint id> --against bot|random|<checkpoint id> --games N [--temperature T (0: greedy)] [--env <environment version id>] [--no-watch]',
  tournament: 'whetstone tournament <checkpoint id | bot name>… [--games N] [--env <environment version id>] [--no-watch]',
  workers: 'whetstone workers',
  doctor: 'whetstone doctor',
  provider: [
    'whetstone provider list | create NAME --settings FILE.json | update NAME --settings FILE.json | delete NAME  [--shared]',
    'whetstone provider slurm [--token-file FILE]',
  ].join('\n  '),
  datasets: 'whetstone datasets [upload <file.jsonl> [--name NAME]]',
  models: [
    'whetstone models list | whetstone models import <Hugging Face model folder | hf:owner/name[@revision]> [--name NAME]',
    'whetstone models export <checkpoint id | base name> <folder> [--format merged|peft]',
  ].join('\n       '),
  sample:
    'whetstone sample <imported model name | id | checkpoint id | base name> --prompt "…" [--chat [--system "…"]] [--greedy | --temperature T --top-p P] [--max-tokens N] [--seed N] [--idle SECONDS] [--json]',
  secrets: 'whetstone secrets list | whetstone secrets set NAME [--value-file FILE] (else the value from stdin) | whetstone secrets delete NAME',
  env: [
    'whetstone env create <name> --http URL [--http URL]… [--kind single-turn|multi-turn|multi-agent] [--agents x,o] [--max-turns N] [--max-tokens N] [--timeout SECONDS] [--prompt-field FIELD] [--token-secret NAME] [--dataset rows.jsonl]',
    'whetstone env export <environment name | id> [--version N] [--output file.wsenv]',
    'whetstone env import <file.wsenv> [--name NAME]',
  ].join('\n       '),
};

/** Parses argv (without node and the script). Throws UsageError on anything malformed. */
export function parseCommandLine(argv: string[]): CommandLine {
  const name = argv.find((a) => !a.startsWith('-') && !isGlobalValue(argv, a));
  const commandOptions = name && name in COMMAND_OPTIONS ? COMMAND_OPTIONS[name] : {};
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, options: { ...GLOBAL_OPTIONS, ...commandOptions }, allowPositionals: true, strict: true });
  } catch (e) {
    const message = (e as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    throw new UsageError(message, name && USAGE[name] ? [`usage: ${USAGE[name]}`] : ['run whetstone --help for the commands']);
  }
  const v = parsed.values as Record<string, string | boolean | undefined>;
  const str = (k: string) => v[k] as string | undefined;
  const bool = (k: string) => v[k] === true;
  const globals: GlobalOptions = { server: str('server'), apiKey: str('api-key'), team: str('team'), json: bool('json') };
  if (globals.server !== undefined) {
    try {
      const u = new URL(globals.server);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    } catch {
      throw new UsageError(`--server must be an http(s) URL, not "${globals.server}"`);
    }
  }
  const [commandName, ...rest] = parsed.positionals;
  if (bool('version')) return { globals, command: { name: 'version' } };
  if (commandName === undefined) return { globals, command: { name: 'help' } };
  if (commandName === 'help') return { globals, command: { name: 'help', topic: rest[0] } };
  if (bool('help')) return { globals, command: { name: 'help', topic: commandName } };
  if (!(commandName in COMMAND_OPTIONS)) throw new UsageError(`unknown command "${commandName}"`, [`commands: ${COMMANDS.join(', ')}; run whetstone --help`]);

  switch (commandName) {
    case 'run': {
      const target = one(rest, 'an environment folder or id', 'run');
      const algo = str('algo');
      if (algo !== undefined && algo !== 'grpo' && algo !== 'ppo' && algo !== 'sft') throw new UsageError(`--algo must be grpo, ppo or sft, not "${algo}"`);
      const set = (v.set as unknown as string[] | undefined) ?? [];
      for (const s of set) if (!/^[A-Za-z][\w.]*=/.test(s)) throw new UsageError(`--set ${s}: write key=value, e.g. --set clipHigh=0.3`, [`usage: ${USAGE.run}`]);
      return {
        globals,
        command: {
          name: 'run', target, algo, config: str('config'), set, from: str('from'), model: str('model'), saveAs: baseNameOf(str('save-as')), steps: positiveInt('steps', str('steps')), watch: bool('watch'),
          priority: nonNegativeInt('priority', str('priority')), dataset: str('dataset'), logs: bool('logs'), tags: (v.tag as unknown as string[] | undefined) ?? [],
        },
      };
    }
    case 'jobs': {
      if (rest.length > 1) throw new UsageError(`jobs takes at most one job id, got: ${rest.join(' ')}`);
      if (bool('config') && rest.length === 0) throw new UsageError('--config shows one job\'s config: whetstone jobs <job> --config');
      const state = str('state')?.toUpperCase();
      if (state !== undefined && !(JOB_STATES as readonly string[]).includes(state)) throw new UsageError(`--state must be one of ${JOB_STATES.join(', ')}`);
      return { globals, command: { name: 'jobs', state: state as JobStateName | undefined, limit: positiveInt('limit', str('limit'), 200) ?? 50, jobId: rest[0], config: bool('config') } };
    }
    case 'logs':
      return { globals, command: { name: 'logs', jobId: one(rest, 'a job id', 'logs'), follow: bool('follow') } };
    case 'cancel':
      return { globals, command: { name: 'cancel', jobId: one(rest, 'a job id', 'cancel') } };
    case 'eval': {
      const checkpointId = one(rest, 'a checkpoint id', 'eval');
      const against = str('against') ?? 'bot';
      const games = positiveInt('games', str('games'), 10_000) ?? 20;
      return {
        globals,
        command: {
          name: 'eval', checkpointId, games, env: str('env'), watch: !bool('no-watch'), priority: nonNegativeInt('priority', str('priority')),
          temperature: temperatureOf(str('temperature')),
          against: against === 'bot' || against === 'random' ? against : { checkpointId: against },
        },
      };
    }
    case 'tournament': {
      if (rest.length < 2) throw new UsageError(`tournament needs two players or more, got ${rest.length}`, [`usage: ${USAGE.tournament}`]);
      return { globals, command: { name: 'tournament', players: rest, games: positiveInt('games', str('games'), 1_000) ?? 10, env: str('env'), watch: !bool('no-watch') } };
    }
    case 'workers':
      if (rest.length > 0) throw new UsageError(`workers takes no arguments, got: ${rest.join(' ')}`);
      return { globals, command: { name: 'workers' } };
    case 'doctor':
      if (rest.length > 0) throw new UsageError(`doctor takes no arguments, got: ${rest.join(' ')}`);
      return { globals, command: { name: 'doctor' } };
    case 'provider': {
      const [action, ...names] = rest;
      const shared = bool('shared');
      if (action === 'slurm' && names.length === 0) return { globals, command: { name: 'provider', kind: 'slurm', tokenFile: str('token-file') } };
      if (str('token-file') !== undefined) throw new UsageError('--token-file goes with provider slurm (the agent)', [`usage: ${USAGE.provider}`]);
      if (action === 'list' && names.length === 0) return { globals, command: { name: 'provider-list', shared } };
      if (action === 'delete') return { globals, command: { name: 'provider-delete', provider: one(names, 'a provider name or id', 'provider'), shared } };
      if (action === 'create' || action === 'update') {
        const settingsFile = str('settings');
        if (settingsFile === undefined) throw new UsageError(`provider ${action} needs --settings FILE.json (the Slurm settings: docs/deploying.md)`, [`usage: ${USAGE.provider}`]);
        const target = one(names, action === 'create' ? 'a name' : 'a provider name or id', 'provider');
        return action === 'create'
          ? { globals, command: { name: 'provider-create', providerName: target, settingsFile, shared } }
          : { globals, command: { name: 'provider-update', provider: target, settingsFile, shared } };
      }
      throw new UsageError(`provider takes "list", "create NAME", "update NAME", "delete NAME" or "slurm", got: ${rest.join(' ') || 'nothing'}`, [`usage: ${USAGE.provider}`]);
    }
    case 'datasets': {
      if (rest.length === 0) {
        if (str('name') !== undefined) throw new UsageError('--name goes with datasets upload', [`usage: ${USAGE.datasets}`]);
        return { globals, command: { name: 'datasets' } };
      }
      if (rest[0] !== 'upload') throw new UsageError(`datasets takes no argument or "upload <file.jsonl>", got: ${rest.join(' ')}`, [`usage: ${USAGE.datasets}`]);
      return { globals, command: { name: 'datasets-upload', file: one(rest.slice(1), 'a JSONL file', 'datasets'), datasetName: str('name') } };
    }
    case 'models': {
      const [action, ...args] = rest;
      if (action === 'list' && args.length === 0 && str('name') === undefined && str('format') === undefined) return { globals, command: { name: 'models-list' } };
      if (action === 'export') {
        if (str('name') !== undefined) throw new UsageError('--name goes with models import', [`usage: ${USAGE.models}`]);
        if (args.length !== 2) throw new UsageError(`models export needs a checkpoint and a folder, got: ${args.join(' ') || 'nothing'}`, [`usage: ${USAGE.models}`]);
        const format = str('format') ?? 'merged';
        if (!(EXPORT_FORMATS as readonly string[]).includes(format)) throw new UsageError(`--format must be ${EXPORT_FORMATS.join(' or ')}, not "${format}"`);
        return { globals, command: { name: 'models-export', checkpointId: args[0], folder: args[1], format: format as ExportFormat } };
      }
      if (action !== 'import') throw new UsageError(`models takes "list", "import <folder>" or "export <checkpoint> <folder>", got: ${rest.join(' ') || 'nothing'}`, [`usage: ${USAGE.models}`]);
      if (str('format') !== undefined) throw new UsageError('--format goes with models export', [`usage: ${USAGE.models}`]);
      const modelName = str('name');
      if (modelName !== undefined) {
        const named = modelNameSchema.safeParse(modelName);
        if (!named.success) throw new UsageError(`--name ${modelName}: ${named.error.issues[0].message}`);
      }
      const source = one(args, 'a model folder or hf:owner/name', 'models');
      if (source.startsWith('hf:')) {
        // hf:owner/name[@revision]: the server downloads it from the Hugging Face hub.
        const [repo, revision, ...more] = source.slice(3).split('@');
        if (more.length > 0 || !hubRepoSchema.safeParse(repo).success) throw new UsageError(`${source}: a Hugging Face repo is hf:owner/name or hf:owner/name@revision`, [`usage: ${USAGE.models}`]);
        if (revision !== undefined && !hubRevisionSchema.safeParse(revision).success) throw new UsageError(`${source}: "${revision}" is not a branch, tag or commit`);
        return { globals, command: { name: 'models-import-hub', repo, revision, modelName } };
      }
      return { globals, command: { name: 'models-import', folder: source, modelName } };
    }
    case 'sample': {
      const target = one(rest, 'a model or checkpoint', 'sample');
      const prompt = str('prompt');
      if (prompt === undefined) throw new UsageError('sample needs --prompt "…"', [`usage: ${USAGE.sample}`]);
      if (str('system') !== undefined && !bool('chat')) throw new UsageError('--system goes with --chat', [`usage: ${USAGE.sample}`]);
      if (bool('greedy') && (str('temperature') !== undefined || str('top-p') !== undefined)) throw new UsageError('--greedy is temperature 0: leave out --temperature and --top-p');
      const topP = str('top-p');
      if (topP !== undefined && (!/^(0?\.\d+|1(\.0*)?)$/.test(topP) || Number(topP) <= 0)) throw new UsageError(`--top-p must be a number above 0 and at most 1, not "${topP}"`);
      return {
        globals,
        command: {
          name: 'sample', target, prompt, chat: bool('chat'), system: str('system'),
          temperature: bool('greedy') ? 0 : (temperatureOf(str('temperature')) ?? 1),
          topP: topP === undefined ? undefined : Number(topP),
          maxTokens: positiveInt('max-tokens', str('max-tokens'), 512) ?? 64,
          seed: nonNegativeInt('seed', str('seed')),
          idleSeconds: positiveInt('idle', str('idle'), 86_400) ?? 120,
        },
      };
    }
    case 'secrets': {
      const [action, ...names] = rest;
      if (action === 'list' && names.length === 0 && str('value-file') === undefined) return { globals, command: { name: 'secrets-list' } };
      if (action !== 'set' && action !== 'delete') throw new UsageError(`secrets takes "list", "set NAME" or "delete NAME", got: ${rest.join(' ') || 'nothing'}`, [`usage: ${USAGE.secrets}`]);
      const secretName = one(names, 'a secret name', 'secrets');
      const named = secretNameSchema.safeParse(secretName);
      if (!named.success) throw new UsageError(`secret name ${secretName}: ${named.error.issues[0].message}`);
      if (action === 'delete') {
        if (str('value-file') !== undefined) throw new UsageError('--value-file goes with secrets set', [`usage: ${USAGE.secrets}`]);
        return { globals, command: { name: 'secrets-delete', secretName } };
      }
      return { globals, command: { name: 'secrets-set', secretName, valueFile: str('value-file') } };
    }
    case 'env': {
      if (rest[0] === 'export') {
        const environment = one(rest.slice(1), 'an environment name or id', 'env');
        return { globals, command: { name: 'env-export', environment, version: positiveInt('version', str('version')), output: str('output') } };
      }
      if (rest[0] === 'import') return { globals, command: { name: 'env-import', file: one(rest.slice(1), 'a package file', 'env'), environmentName: str('name') } };
      if (rest[0] !== 'create') throw new UsageError(`env takes "create", "export" or "import", got: ${rest.join(' ') || 'nothing'}`, [`usage: ${USAGE.env}`]);
      const environmentName = one(rest.slice(1), 'a name', 'env');
      const urls = (v.http as unknown as string[] | undefined) ?? [];
      if (urls.length === 0) throw new UsageError('env create needs the game server: --http URL (once per server process)', [`usage: ${USAGE.env}`]);
      for (const url of urls) if (!URL.canParse(url) || !['http:', 'https:'].includes(new URL(url).protocol)) throw new UsageError(`--http must be an http(s) URL, not "${url}"`);
      const kind = str('kind') ?? (str('agents') !== undefined ? 'multi-agent' : 'single-turn');
      if (kind !== 'single-turn' && kind !== 'multi-turn' && kind !== 'multi-agent') throw new UsageError(`--kind must be single-turn, multi-turn or multi-agent, not "${kind}"`);
      if (kind === 'single-turn' && str('max-turns') !== undefined) throw new UsageError('--max-turns goes with --kind multi-turn or multi-agent (a single-turn game has one turn)');
      const agents = str('agents')?.split(',').map((a) => a.trim());
      if (kind === 'multi-agent' && (agents?.length ?? 0) < 2) throw new UsageError('--kind multi-agent needs its agents in turn order: --agents x,o');
      if (kind !== 'multi-agent' && agents) throw new UsageError('--agents goes with --kind multi-agent');
      const timeout = str('timeout');
      if (timeout !== undefined && !/^\d+(\.\d+)?$/.test(timeout)) throw new UsageError(`--timeout must be seconds, not "${timeout}"`);
      const tokenSecret = str('token-secret');
      if (tokenSecret !== undefined && !secretNameSchema.safeParse(tokenSecret).success) throw new UsageError(`--token-secret ${tokenSecret}: the name of a team secret, in upper-case letters, digits and underscores`);
      return {
        globals,
        command: {
          name: 'env-create', environmentName, urls, kind, agents, maxTurns: positiveInt('max-turns', str('max-turns'), 1000), maxTokens: positiveInt('max-tokens', str('max-tokens'), 4096),
          timeoutSeconds: timeout === undefined ? undefined : Number(timeout), promptField: str('prompt-field'), tokenSecret, dataset: str('dataset'),
        },
      };
    }
    default:
      throw new UsageError(`unknown command "${commandName}"`);
  }
}

/** True when `word` is the value of a global option given as `--server URL` (not the command). */
function isGlobalValue(argv: string[], word: string): boolean {
  const i = argv.indexOf(word);
  const before = argv[i - 1];
  return i > 0 && (before === '--server' || before === '--api-key' || before === '--team');
}

export const HELP = `whetstone — the Whetstone command line

usage: whetstone [--server URL] [--api-key KEY] [--team ID] [--json] <command> …

commands:
  ${USAGE.run}
      Uploads the environment folder as a version if its content is new (versions are
      content-addressed), prints its dry-run errors as file:line:column and stops if it fails,
      then submits a TRAIN job (SFT job for --algo sft). A data-dependent environment's JSONL
      file is uploaded as a dataset version too (also content-addressed) and named in the job;
      --dataset names another: a dataset version id, or a .jsonl file to upload (required for
      sft: rows {"prompt", "completion"} or {"messages"}). Training options come from the
      manifest's "training" (its algorithm too), then --config (a JSON job config, a file or
      inline: '{"training": {"batchSize": 4, "model": {"width": 32}}}'), then each
      --set key=value (any option: --set clipHigh=0.3 --set epochs=2 --set model.contextLength=256),
      then --algo and --steps. Unknown options are refused with the closest name. --from starts
      from a checkpoint's weights instead of a new policy: a base's name (the team's named
      checkpoints, e.g. gomoku-9x9-bc) or a checkpoint id. GRPO after an SFT warm start is
      whetstone run <env> --algo grpo --from <the SFT job's checkpoint>. --model starts from an
      imported pretrained model (whetstone models), with LoRA adapters unless --set lora=false,
      through its own tokenizer and chat template. --save-as <name>
      saves the run's last sampler checkpoint as a base of that name when it succeeds (a name
      already taken is reported in the run's events; the run still succeeds).
      --watch shows a progress bar and reward/loss until the job ends, then its checkpoints.
  ${USAGE.jobs}
      The team's jobs: id, kind, state, priority, owner, age, the newest sampler checkpoint (for
      eval and the playground), and why it waits or failed. With a job id: that job, and with
      --config its resolved training config, option by option, grouped.
  ${USAGE.logs}
      A job's log; --follow keeps printing until the job ends.
  ${USAGE.cancel}
      Cancels a job (a running one is stopped by its worker).
  ${USAGE.eval}
      Submits an EVAL job (N games or problems against the environment's bot, random moves or
      another checkpoint) and watches it; prints the score. --env defaults to the environment
      the checkpoint was trained on.
  ${USAGE.tournament}
      Every checkpoint plays every other player, N games a pairing (default 10), seats
      alternated, each pairing an EVAL job; bots are named as the environment names them
      (random, scripted…) and do not play each other. Watches it and prints the Elo table
      (95% intervals). --env defaults to the environment the first checkpoint was trained on.
  ${USAGE.workers}
      The workers that can run the team's jobs: the team's pool and the shared one.
  ${USAGE.doctor}
      What a worker on this machine would compute with, without a server: the backend (the
      GPU adapter, or on the CPU the kernel path, its threads and the CPU features it uses),
      why faster backends were skipped, and a measured 1024³ matmul rate.
  ${USAGE.provider}
      A pool's cluster providers (the team's; --shared: the shared pool's, for installation
      admins): list them with their launches and last error; create one from a JSON file of
      Slurm settings (checked field by field; the agent's credential is printed once), change
      its settings (which ends a backoff), or delete it. provider slurm runs a provider agent here (a Slurm login node): it starts workers with sbatch
      when the provider's pool has jobs waiting for capacity, watches them with squeue, and
      cancels those that never register. The credential (wsp_…, shown once when an admin
      creates the provider) comes from WHETSTONE_PROVIDER_TOKEN or --token-file (mode 600).
  ${USAGE.datasets}
      The team's datasets with their latest version; upload stores a JSONL file as the next
      version of the dataset --name (default: the file's name), or finds the identical one.
  ${USAGE.models}
      The team's pretrained models (Llama and Qwen families). import uploads a Hugging Face model
      folder (config.json, model.safetensors or its shards with model.safetensors.index.json,
      tokenizer.json, tokenizer_config.json, and chat_template.jinja or generation_config.json
      when present) under --name (default: the folder's name); the server checks it whole (every
      tensor's shape and dtype, the tokenizer, the chat template) before it becomes a model, and
      keeps nothing of a refused one. Runs start from it with whetstone run <env> --model NAME.
      import hf:owner/name[@revision] has the server download the model from the Hugging Face hub
      (its HF_ENDPOINT, with its HF_TOKEN for gated or private repos; revision default main, name
      default the repo's) and check it the same way; the command waits until it is done.
      export writes a checkpoint of an imported model (a run's checkpoint id, or a base's name)
      into <folder> as a Hugging Face model folder: config.json, the tokenizer and chat template,
      and model.safetensors with the LoRA adapters merged in (--format merged, the default), or
      the adapters alone in PEFT's layout (--format peft: adapter_model.safetensors and
      adapter_config.json). transformers loads it; vLLM and llama.cpp serve it.
  ${USAGE.sample}
      Samples one completion through an inference session on a worker (the playground's): from
      an imported model as imported, or from a checkpoint. --chat lays the prompt out as a user
      turn through the model's chat template (--system adds a system message); without it the
      prompt is raw text. Default temperature 1, 64 tokens; --greedy takes the likeliest token
      each time. The session stays open --idle seconds (default 120) for the next sample, which
      reuses it. --json prints {text, tokens: [{id, text, logprob}], reason, timing}.
  ${USAGE.secrets}
      The team's secrets: values that HTTP environments send as headers, named in a manifest as
      "headers": { "Authorization": { "secret": "NAME", "prefix": "Bearer " } }. list shows the
      names and who set them (never values); set (admins) stores a new value or replaces one,
      read from --value-file or from stdin (printf %s "$TOKEN" | whetstone secrets set NAME),
      never from the command line, where the shell history and ps would keep it; one trailing
      newline is dropped. delete (admins) removes one.
  ${USAGE.env}
      Saves an environment whose game is served over HTTP (OpenTinker's protocol: /reset, /step,
      /finalize; docs/http-environments.md) as the next version of <name>: no code, a manifest
      made from the flags. --http names each server process (episodes are spread over them by
      instance id); --timeout is each call's limit (default 60 s); --dataset is a JSONL file of
      rows whose fields /reset is sent (a data-dependent game), --prompt-field the row's field
      shown to the model first (default prompt). --agents x,o (kind multi-agent) names a game's
      agents in turn order; every one learns, with one policy (self-play). --token-secret NAME
      sends the team secret NAME as Authorization: Bearer … (whetstone secrets set NAME
      first). The server plays a
      few episodes on it at once; a server that does not answer leaves the version invalid and
      is named. Then: whetstone run <name> --watch.
      export writes an environment's version (its newest, or --version N) as one package file:
      its code or manifest, README, reward tests and dataset rows, with its content hash.
      import takes such a file into the team as a new environment, or as the next version of
      the one of its name, keeping its content hash (--name imports it under another name,
      which changes the hash); a file changed after export, or of a newer format, is refused.

options:
  --server URL     the server (default WHETSTONE_URL, else http://127.0.0.1:3000)
  --api-key KEY    an API key wsk_… (default WHETSTONE_API_KEY; on the machine running npm start,
                   the local key in WHETSTONE_HOME/local-credentials.json is used without a flag)
  --team ID        the team (default: the API key's team)
  --json           one JSON document on stdout for programs (logs --follow: one JSON object per line)
  -h, --help       this help, or a command's: whetstone run --help
  --version        the CLI's version

exit codes:
  0    ok (a watched job SUCCEEDED)
  1    the watched job FAILED or was CANCELLED
  2    usage error (unknown command or option, bad argument)
  3    cannot reach the server (not running, wrong --server, timed out)
  4    not authorized (no credentials, the API key was refused, or the role may not)
  5    not found (job, environment, checkpoint, team)
  6    rejected by the server (invalid config, environment failed its dry run, quota)
  7    the server failed (internal error)
  8    doctor: this machine's check failed (no backend could load)
  130  interrupted with Ctrl-C while watching (the job keeps running)
`;
