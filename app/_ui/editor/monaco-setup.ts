// Monaco from the npm package (never a CDN), with its web workers served from the origin, the
// SDK's declarations as the `whetstone` module and the manifest's JSON schema. Imported only by
// the editor's client components (loaded without SSR), so Monaco is in no other page's bundle.
import { loader } from '@monaco-editor/react';
import * as monaco from 'monaco-editor';
import manifestSchema from '../../../sdk/manifest.schema.json';

declare global {
  interface Window {
    MonacoEnvironment?: monaco.Environment;
  }
}

let ready: Promise<typeof monaco> | null = null;

/** Configures Monaco once per page load; resolves when the SDK's types are loaded. */
export function setupMonaco(): Promise<typeof monaco> {
  ready ??= (async () => {
    window.MonacoEnvironment = {
      getWorker(_workerId, label) {
        if (label === 'typescript' || label === 'javascript') {
          return new Worker(new URL('monaco-editor/language/typescript/ts.worker', import.meta.url), { type: 'module', name: label });
        }
        if (label === 'json') {
          return new Worker(new URL('monaco-editor/language/json/json.worker', import.meta.url), { type: 'module', name: label });
        }
        return new Worker(new URL('monaco-editor/editor/editor.worker', import.meta.url), { type: 'module', name: label });
      },
    };
    loader.config({ monaco });
    const ts = monaco.typescript;
    // What the sandbox runs (gpu-worker/runtime/sandbox): ES2022 modules, no DOM, no Node.
    ts.typescriptDefaults.setCompilerOptions({
      target: ts.ScriptTarget.ES2020,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.NodeJs,
      lib: ['es2022'],
      strict: true,
      noEmit: true,
      allowNonTsExtensions: true,
      isolatedModules: true,
    });
    ts.typescriptDefaults.setEagerModelSync(true);
    const dts = await fetch('/sdk/environment-api.d.ts').then((r) => (r.ok ? r.text() : ''));
    if (dts) ts.typescriptDefaults.addExtraLib(dts, 'file:///node_modules/@types/whetstone/index.d.ts');
    monaco.json.jsonDefaults.setDiagnosticsOptions({
      validate: true,
      allowComments: false,
      schemas: [{ uri: 'whetstone://manifest.schema.json', fileMatch: ['**/manifest.json'], schema: manifestSchema }],
    });
    return monaco;
  })();
  return ready;
}

export type Monaco = typeof monaco;
