// An environment version's source as saved and shipped: the files and the entry. The sandbox
// compiles it (gpu-worker/runtime/sandbox/compile.ts), and the built-in templates are loaded as
// one (env-templates/load-template.ts); both read this one definition.

export interface EnvironmentSource {
  /** Relative paths ("env.ts", "lib/board.ts") to their text. */
  files: Record<string, string>;
  /** The file whose default export is the environment. */
  entry: string;
}
