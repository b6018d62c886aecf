import fs from 'node:fs';
import path from 'node:path';
import { type Manifest, parseManifest } from '../manifest';
import { CliError, EXIT } from './errors';

// An environment folder as the editor saves it and env-templates/ keeps it: manifest.json, the
// TypeScript files (tests left out), and the JSONL dataset the manifest names. Read the same way
// env-templates/load-template.ts reads a template.

const SKIP_DIRS = new Set(['node_modules', '.git', '.whetstone']);
const MAX_FILES = 50;

export interface EnvironmentFolder {
  dir: string;
  manifest: Manifest;
  /** The manifest as written (the server applies the defaults itself). */
  rawManifest: Record<string, unknown>;
  files: Record<string, string>;
  /** The train split's text, for the dry run of a data-dependent environment. */
  datasetText?: string;
  /** The held-out split's text (manifest dataset.heldOut), when the folder has it. */
  heldOutText?: string;
}

export function isEnvironmentFolder(target: string, cwd: string): boolean {
  const dir = path.resolve(cwd, target);
  return fs.existsSync(path.join(dir, 'manifest.json')) || (fs.existsSync(dir) && fs.statSync(dir).isDirectory());
}

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) return SKIP_DIRS.has(entry.name) ? [] : walk(path.join(dir, entry.name));
    return [path.join(dir, entry.name)];
  });
}

export function readEnvironmentFolder(target: string, cwd: string): EnvironmentFolder {
  const dir = path.resolve(cwd, target);
  const manifestPath = path.join(dir, 'manifest.json');
  const rel = (p: string) => path.relative(cwd, p) || '.';
  if (!fs.existsSync(manifestPath)) throw new CliError(`${rel(dir)} has no manifest.json: is it an environment folder?`, EXIT.USAGE);
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  } catch (e) {
    throw new CliError(`${rel(manifestPath)}: not valid JSON: ${(e as Error).message}`, EXIT.REJECTED);
  }
  const parsed = parseManifest(raw);
  if (!parsed.ok) throw new CliError(`${rel(manifestPath)} is not a valid manifest`, EXIT.REJECTED, parsed.problems.map((p) => `${rel(manifestPath)}: ${p}`));
  const files: Record<string, string> = {};
  for (const file of walk(dir)) {
    const name = path.relative(dir, file).split(path.sep).join('/');
    if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) files[name] = fs.readFileSync(file, 'utf8');
  }
  const count = Object.keys(files).length;
  // Served over HTTP (the manifest's `server`), the code runs on the servers: none is needed here.
  const served = parsed.manifest.server !== undefined;
  if (count === 0 && !served) throw new CliError(`${rel(dir)} has no .ts files`, EXIT.REJECTED);
  if (count > MAX_FILES) throw new CliError(`${rel(dir)} has ${count} .ts files; an environment has at most ${MAX_FILES}`, EXIT.REJECTED);
  if (!served && !(parsed.manifest.entry in files)) throw new CliError(`${rel(manifestPath)}: entry ${parsed.manifest.entry} is not in the folder`, EXIT.REJECTED);
  let datasetText: string | undefined;
  if (parsed.manifest.dataset) {
    const datasetPath = path.join(dir, parsed.manifest.dataset.train);
    if (!fs.existsSync(datasetPath)) throw new CliError(`${rel(manifestPath)}: dataset ${parsed.manifest.dataset.train} is missing`, EXIT.REJECTED);
    datasetText = fs.readFileSync(datasetPath, 'utf8');
  }
  const heldOutPath = parsed.manifest.dataset?.heldOut ? path.join(dir, parsed.manifest.dataset.heldOut) : null;
  const heldOutText = heldOutPath && fs.existsSync(heldOutPath) ? fs.readFileSync(heldOutPath, 'utf8') : undefined;
  return { dir, manifest: parsed.manifest, rawManifest: raw as Record<string, unknown>, files, datasetText, heldOutText };
}
