/**
 * Type-checks an environment's TypeScript against the SDK's declarations (sdk/environment-api.d.ts,
 * the `whetstone` module the editor loads too), so that Save reports type errors as editor markers
 * alongside esbuild's syntax errors. It runs in the dry-run process, never on the server's event
 * loop. The files are virtual; only ES2022's lib (no DOM: the sandbox has none) and the sandbox's
 * console are declared. The lib and SDK source files are parsed once per process and reused by
 * every check (TypeScript binds a reused SourceFile once), which makes checks after the first fast.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as TS from 'typescript';
import type { CompileDiagnostic } from '../../../sdk/dry-run-report';
import type { EnvironmentSource } from '../../../sdk/environment-source';
import { REWARD_TESTS_FILE } from '../../../sdk/environment/tests';

const SDK_DTS = fileURLToPath(new URL('../../../sdk/environment-api.d.ts', import.meta.url));
/** Where the user's files live in the virtual file system. */
const ROOT = '/env';
const SDK_FILE = '/whetstone/environment-api.d.ts';
const GLOBALS_FILE = '/whetstone/sandbox-globals.d.ts';
/** What the sandbox's prelude (prelude.ts) adds to the global object, and the SDK's second module name (compile.ts). */
const GLOBALS = `declare var console: {
  log(...data: unknown[]): void;
  info(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  debug(...data: unknown[]): void;
};
declare module '@whetstone/sdk' {
  export * from 'whetstone';
}
`;
const MAX_DIAGNOSTICS = 100;
const MAX_MESSAGE_CHARS = 2_000;

export interface TypeCheckResult {
  typeErrors: CompileDiagnostic[];
  ms: number;
}

interface Checker {
  ts: typeof TS;
  options: TS.CompilerOptions;
  libDir: string;
  /** Lib, SDK and globals, parsed once. */
  shared: Map<string, TS.SourceFile>;
  previous: TS.Program | undefined;
}

let checker: Promise<Checker | null> | null = null;

/** TypeScript is a development dependency: without it (a production-only install) there is no type check. */
function loadChecker(): Promise<Checker | null> {
  checker ??= import('typescript').then(
    (module) => {
      const ts = (module as { default?: typeof TS }).default ?? (module as unknown as typeof TS);
      const options: TS.CompilerOptions = {
        strict: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
        lib: ['lib.es2022.d.ts'],
        types: [],
        skipLibCheck: true,
        skipDefaultLibCheck: true,
        resolveJsonModule: true,
        // esbuild resolves './board.ts' as well as './board'.
        allowImportingTsExtensions: true,
      };
      const shared = new Map<string, TS.SourceFile>([
        [SDK_FILE, ts.createSourceFile(SDK_FILE, readFileSync(SDK_DTS, 'utf8'), ts.ScriptTarget.ES2022, true)],
        [GLOBALS_FILE, ts.createSourceFile(GLOBALS_FILE, GLOBALS, ts.ScriptTarget.ES2022, true)],
      ]);
      return { ts, options, libDir: dirname(ts.getDefaultLibFilePath(options)), shared, previous: undefined };
    },
    () => null,
  );
  return checker;
}

/** Loads TypeScript and the lib before the first check needs them (a process's first check pays seconds for both). */
export async function warmTypeChecker(): Promise<void> {
  await typeCheckEnvironment({ entry: 'env.ts', files: { 'env.ts': "import { defineSingleTurn } from 'whetstone';\nexport default defineSingleTurn({ name: 'warm', systemPrompt: '', sample: () => 1, prompt: () => '', reward: () => 0 });\n" } });
}

/** The type errors of the files the entry and tests.ts reach; null when TypeScript is not installed. */
export async function typeCheckEnvironment(source: EnvironmentSource): Promise<TypeCheckResult | null> {
  const c = await loadChecker();
  if (!c) return null;
  const started = performance.now();
  const { ts, shared, libDir } = c;
  const user = new Map(Object.entries(source.files).map(([path, text]) => [`${ROOT}/${path}`, text]));
  const isLib = (name: string) => dirname(name) === libDir;
  const host: TS.CompilerHost = {
    getSourceFile: (name, languageVersion) => {
      const text = user.get(name);
      if (text !== undefined) return ts.createSourceFile(name, text, languageVersion, true);
      let file = shared.get(name);
      if (!file && isLib(name)) {
        file = ts.createSourceFile(name, readFileSync(name, 'utf8'), languageVersion, true);
        shared.set(name, file);
      }
      return file;
    },
    getDefaultLibFileName: (options) => join(libDir, ts.getDefaultLibFileName(options)),
    writeFile: () => {},
    getCurrentDirectory: () => ROOT,
    getCanonicalFileName: (name) => name,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => '\n',
    fileExists: (name) => user.has(name) || shared.has(name) || (isLib(name) && ts.sys.fileExists(name)),
    readFile: (name) => user.get(name) ?? shared.get(name)?.text ?? (isLib(name) ? ts.sys.readFile(name) : undefined),
    directoryExists: (name) => name === ROOT || name.startsWith(`${ROOT}/`) || name === libDir,
    getDirectories: () => [],
  };
  // What runs: the entry and the reward tests, with what they import (as esbuild bundles them;
  // a Node script kept beside the code, like a dataset generator, is neither).
  const roots = [source.entry, REWARD_TESTS_FILE].filter((path) => path in source.files).map((path) => `${ROOT}/${path}`).concat(SDK_FILE, GLOBALS_FILE);
  const program = ts.createProgram({ rootNames: roots, options: c.options, host, oldProgram: c.previous });
  c.previous = program;
  const typeErrors: CompileDiagnostic[] = [];
  for (const file of program.getSourceFiles()) {
    if (!user.has(file.fileName)) continue;
    for (const d of [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]) {
      if (typeErrors.length < MAX_DIAGNOSTICS) typeErrors.push(toDiagnostic(ts, d));
    }
  }
  return { typeErrors, ms: Math.round(performance.now() - started) };
}

function toDiagnostic(ts: typeof TS, d: TS.Diagnostic): CompileDiagnostic {
  const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
  const message = text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}…` : text;
  if (!d.file || d.start === undefined) return { message, location: null, lineText: '' };
  const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
  const lineText = d.file.text.split('\n')[line] ?? '';
  return {
    message,
    location: { file: d.file.fileName.slice(ROOT.length + 1), line: line + 1, column: character + 1 },
    lineText: lineText.replace(/\r$/, ''),
    ...(d.length !== undefined ? { length: d.length } : {}),
  };
}
