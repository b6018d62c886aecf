/**
 * Reads a built-in template from its folder: the code the sandbox bundles, its manifest and its
 * datasets. Templates go through the same compile and sandbox path as user code.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseJsonlDataset } from '../sdk/dataset';
import { type Json, type ObjectSchema } from '../sdk/environment/schema';
import { type Manifest, parseManifest } from '../sdk/manifest';
import type { EnvironmentSource } from '../sdk/environment-source';

/** An environment's README: Markdown kept with its code (a version may carry it; it is never compiled). */
export const README_FILE = 'README.md';

export const TEMPLATE_NAMES = ['math', 'math-tools', 'bandit', 'gomoku'] as const;
export type TemplateName = (typeof TEMPLATE_NAMES)[number];
/**
 * The starting point of a new environment ("New environment → Blank"): loaded like a template but
 * not seeded into teams (server/environments/templates.ts seeds TEMPLATE_NAMES only).
 */
export const BLANK_TEMPLATE = 'blank';

export interface LoadedTemplate {
  manifest: Manifest;
  /** manifest.json as written: what a job's training options are merged over. */
  rawManifest: Record<string, unknown>;
  source: EnvironmentSource;
  readme: string;
  /** Raw JSONL text by path, for data-dependent templates. */
  datasetFiles: Record<string, string>;
}

/** The files an environment made from the template starts with: its code, and its README beside it (to be edited with the code). */
export function templateFiles(t: LoadedTemplate): Record<string, string> {
  return t.readme ? { ...t.source.files, [README_FILE]: t.readme } : t.source.files;
}

function templateDir(name: TemplateName | typeof BLANK_TEMPLATE): string {
  return fileURLToPath(new URL(`./${name}/`, import.meta.url));
}

export function loadTemplate(name: TemplateName | typeof BLANK_TEMPLATE): LoadedTemplate {
  const dir = templateDir(name);
  const rawManifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  const parsed = parseManifest(rawManifest);
  if (!parsed.ok) throw new Error(`template ${name}: invalid manifest: ${parsed.problems.join('; ')}`);
  const files: Record<string, string> = {};
  const datasetFiles: Record<string, string> = {};
  for (const path of walk(dir)) {
    const rel = relative(dir, path).split('\\').join('/');
    if (rel.endsWith('.test.ts')) continue;
    if (rel.endsWith('.ts')) files[rel] = readFileSync(path, 'utf8');
    else if (rel.endsWith('.jsonl')) datasetFiles[rel] = readFileSync(path, 'utf8');
  }
  const readmePath = join(dir, README_FILE);
  return {
    manifest: parsed.manifest,
    rawManifest,
    source: { files, entry: parsed.manifest.entry },
    readme: existsSync(readmePath) ? readFileSync(readmePath, 'utf8') : '',
    datasetFiles,
  };
}

/** The rows of a template's dataset split, validated against the row schema. */
export function templateRows(template: LoadedTemplate, split: 'train' | 'heldOut', rowSchema: ObjectSchema): Record<string, Json>[] {
  const path = split === 'train' ? template.manifest.dataset?.train : template.manifest.dataset?.heldOut;
  if (!path) throw new Error(`template ${template.manifest.name} has no ${split} split`);
  const text = template.datasetFiles[path];
  if (text === undefined) throw new Error(`template ${template.manifest.name}: dataset file ${path} is missing`);
  const { rows, problems } = parseJsonlDataset(text, rowSchema);
  if (problems.length > 0) throw new Error(`${path}: ${problems.map((p) => `line ${p.line}: ${p.message}`).join('; ')}`);
  return rows;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}
