/**
 * Turns an environment's TypeScript files into one script for the sandbox: the prelude, the
 * user's modules, the SDK and the driver, bundled by esbuild with an inline source map. User code
 * may import its own files and `whetstone` (the SDK), nothing else.
 */
import { createHash } from 'node:crypto';
import { dirname, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Message, type Plugin } from 'esbuild';
import { SourceMapper } from './source-map';
import type { CompileDiagnostic } from '../../../sdk/dry-run-report';
import type { EnvironmentSource } from '../../../sdk/environment-source';

const HERE = dirname(fileURLToPath(import.meta.url));
const SDK_ENTRY = fileURLToPath(new URL('../../../sdk/environment/index.ts', import.meta.url));
/** Names under which user code may import the SDK. */
const SDK_MODULE_NAMES = ['whetstone', '@whetstone/sdk'];
/** Source-map prefix of user files, stripped again when errors are reported. */
const USER_NAMESPACE = 'user';

export interface CompiledEnvironment {
  /** The bundle, with an inline source map. */
  code: string;
  /** Content hash of the sources (and this compiler's inputs): the cache and pool key. */
  hash: string;
  mapper: SourceMapper;
  warnings: CompileDiagnostic[];
}

export type CompileResult = { ok: true; compiled: CompiledEnvironment } | { ok: false; errors: CompileDiagnostic[] };

const cache = new Map<string, CompiledEnvironment>();
const CACHE_LIMIT = 32;

export interface CompileOptions {
  /** Bundles this file of the environment's too, for the driver's `tests` method (reward tests). */
  tests?: string;
}

export async function compileEnvironment(source: EnvironmentSource, options: CompileOptions = {}): Promise<CompileResult> {
  const hash = hashSource(source, options);
  const cached = cache.get(hash);
  if (cached) return { ok: true, compiled: cached };
  for (const [what, file] of [['entry file', source.entry], ['tests file', options.tests]]) {
    if (file !== undefined && !(file in source.files)) return { ok: false, errors: [{ message: `${what} "${file}" is missing`, location: null, lineText: '' }] };
  }
  try {
    const result = await build({
      entryPoints: ['whetstone:entry'],
      bundle: true,
      write: false,
      format: 'iife',
      // Environments are ES modules, which are strict by definition; the bundle keeps them so, and
      // an assignment to a frozen built-in (lockdown.ts) then throws at the user's line instead of
      // being ignored.
      banner: { js: '"use strict";' },
      platform: 'neutral',
      target: 'es2022',
      sourcemap: 'inline',
      sourcesContent: true,
      logLevel: 'silent',
      charset: 'utf8',
      plugins: [virtualFiles(source, options)],
    });
    const code = result.outputFiles[0].text;
    const compiled: CompiledEnvironment = {
      code,
      hash,
      mapper: SourceMapper.fromInlineBundle(code),
      warnings: result.warnings.map(toDiagnostic),
    };
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(hash, compiled);
    return { ok: true, compiled };
  } catch (e) {
    const errors = (e as { errors?: Message[] }).errors;
    if (!errors) throw e;
    return { ok: false, errors: errors.map(toDiagnostic) };
  }
}

function virtualFiles(source: EnvironmentSource, options: CompileOptions): Plugin {
  const userPath = (file: string) => JSON.stringify(`${USER_NAMESPACE}:${file}`);
  return {
    name: 'whetstone-virtual-files',
    setup(b) {
      b.onResolve({ filter: /^whetstone:entry$/ }, () => ({ path: 'entry', namespace: 'whetstone' }));
      b.onLoad({ filter: /.*/, namespace: 'whetstone' }, () => ({
        // The prelude is imported first so it runs before any user module.
        contents: [
          `import './prelude';`,
          `import * as userModule from ${userPath(source.entry)};`,
          ...(options.tests ? [`import * as testsModule from ${userPath(options.tests)};`] : []),
          `import { installDriver } from './driver';`,
          `installDriver(userModule${options.tests ? ', testsModule' : ''});`,
        ].join('\n'),
        resolveDir: HERE,
        loader: 'ts',
      }));
      b.onResolve({ filter: /.*/, namespace: 'whetstone' }, (args) => {
        if (args.path.startsWith(`${USER_NAMESPACE}:`)) return { path: args.path.slice(USER_NAMESPACE.length + 1), namespace: USER_NAMESPACE };
        return undefined;
      });
      b.onResolve({ filter: /.*/, namespace: USER_NAMESPACE }, (args) => {
        if (SDK_MODULE_NAMES.includes(args.path)) return { path: SDK_ENTRY };
        if (args.path.startsWith('./') || args.path.startsWith('../')) {
          const base = posix.normalize(posix.join(posix.dirname(args.importer), args.path));
          for (const candidate of [base, `${base}.ts`, `${base}.js`, `${base}/index.ts`]) {
            if (candidate in source.files) return { path: candidate, namespace: USER_NAMESPACE };
          }
          return { errors: [{ text: `cannot find "${args.path}" among this environment's files` }] };
        }
        return {
          errors: [{ text: `cannot import "${args.path}": an environment may import its own files and "whetstone" only` }],
        };
      });
      b.onLoad({ filter: /.*/, namespace: USER_NAMESPACE }, (args) => ({
        contents: source.files[args.path],
        loader: args.path.endsWith('.json') ? 'json' : args.path.endsWith('.js') ? 'js' : 'ts',
      }));
    },
  };
}

function toDiagnostic(m: Message): CompileDiagnostic {
  const loc = m.location;
  return {
    message: m.text,
    location: loc ? { file: stripNamespace(loc.file), line: loc.line, column: loc.column + 1 } : null,
    lineText: loc?.lineText ?? '',
  };
}

function stripNamespace(file: string): string {
  return file.startsWith(`${USER_NAMESPACE}:`) ? file.slice(USER_NAMESPACE.length + 1) : file;
}

function hashSource(source: EnvironmentSource, options: CompileOptions): string {
  const h = createHash('sha256');
  h.update(`entry\0${source.entry}\0tests\0${options.tests ?? ''}\0`);
  for (const path of Object.keys(source.files).sort()) h.update(`${path}\0${source.files[path]}\0`);
  return h.digest('hex');
}
