import { loadTemplate, TEMPLATE_NAMES, templateFiles, type LoadedTemplate, type TemplateName } from '../../env-templates/load-template';
import type { BlobStore } from '../blobs/store';
import type { Db } from '../db/client';
import type { Prisma } from '../db/generated/prisma/client';
import { storedJson } from '../db/stored-json';
import { environmentContentHash } from './content-hash';
import { storeDatasetVersion } from '../datasets/store-version';
import type { DryRunPool } from './dry-run-pool';
import { DRY_RUN_EPISODES } from './save-version';

// The built-in environments (env-templates/) are seeded into teams as ordinary environments, so
// they are listed, versioned, validated and trained exactly like a user's own.

/** A template's dry-run budget (trusted code; see validatePendingTemplates). */
const TEMPLATE_DRY_RUN_BUDGET_MS = 120_000;

const loaded = new Map<TemplateName, LoadedTemplate>();
function template(name: TemplateName): LoadedTemplate {
  if (!loaded.has(name)) loaded.set(name, loadTemplate(name));
  return loaded.get(name)!;
}

function templateContent(name: TemplateName) {
  const t = template(name);
  // With its README, as an environment made from the template has it.
  const content = { entry: t.source.entry, files: templateFiles(t), manifest: t.manifest as unknown as Prisma.InputJsonObject };
  return { ...content, contentHash: environmentContentHash(content) };
}

/**
 * Makes sure a team has every template at its current content: a new environment the first
 * time, a new version when the template changed since. Returns how many versions it created.
 */
export async function ensureTemplates(db: Db, blobs: BlobStore, teamId: string): Promise<number> {
  let created = 0;
  for (const name of TEMPLATE_NAMES) {
    const t = template(name);
    const content = templateContent(name);
    const environment = await db.environment.upsert({
      where: { teamId_name: { teamId, name } },
      update: {},
      create: { teamId, name, template: name, description: t.manifest.description ?? '' },
    });
    const existing = await db.environmentVersion.findUnique({
      where: { environmentId_contentHash: { environmentId: environment.id, contentHash: content.contentHash } },
    });
    if (!existing) {
      const last = await db.environmentVersion.findFirst({ where: { environmentId: environment.id }, orderBy: { version: 'desc' } });
      await db.environmentVersion.create({
        data: { environmentId: environment.id, version: (last?.version ?? 0) + 1, ...content },
      });
      created++;
    }
    for (const [file, text] of Object.entries(t.datasetFiles)) {
      await ensureDataset(db, blobs, teamId, `${name}/${file}`, text);
    }
  }
  return created;
}

async function ensureDataset(db: Db, blobs: BlobStore, teamId: string, name: string, text: string): Promise<void> {
  const result = await storeDatasetVersion(db, blobs, { teamId, name, text, description: 'Shipped with the built-in environment template.' });
  if (!result.ok) throw new Error(`template dataset ${name}: ${result.problems.map((p) => `line ${p.line}: ${p.message}`).join('; ')}`);
}

/**
 * Dry-runs template versions still waiting for validation, once per distinct content, and
 * records the report on every version with that content.
 */
export async function validatePendingTemplates(db: Db, dryRuns: DryRunPool, log: (line: string) => void = () => {}): Promise<number> {
  const pending = await db.environmentVersion.findMany({
    where: { validationStatus: 'PENDING', environment: { template: { not: null } } },
    select: { contentHash: true, environment: { select: { template: true } } },
    distinct: ['contentHash'],
  });
  for (const version of pending) {
    const name = version.environment.template as TemplateName;
    if (!TEMPLATE_NAMES.includes(name) || templateContent(name).contentHash !== version.contentHash) continue;
    const t = template(name);
    const train = t.manifest.dataset?.train;
    const { kind, agents, limits } = t.manifest;
    // The templates are the installation's own: they wait for no team's dry runs, and their budget
    // is wide — the 10 s wall-clock budget protects the server from users' code, and on a loaded
    // machine (a first start, CI) it must not mark known-good templates invalid.
    const report = await dryRuns.run(
      `template:${name}`,
      { source: t.source, manifest: { kind, agents, limits }, dataset: train ? { path: train, text: t.datasetFiles[train] } : undefined, episodes: DRY_RUN_EPISODES },
      { budgetMs: TEMPLATE_DRY_RUN_BUDGET_MS },
    );
    await db.environmentVersion.updateMany({
      where: { contentHash: version.contentHash, validationStatus: 'PENDING' },
      data: { validationStatus: report.ok ? 'VALID' : 'INVALID', validation: storedJson(report) },
    });
    log(`template ${name}: dry run ${report.ok ? 'passed' : 'FAILED'} (${report.episodes} episodes, ${report.durationMs} ms)`);
  }
  return pending.length;
}
