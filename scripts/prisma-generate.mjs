// Runs `prisma generate` from `npm ci`, offline.
//
// Prisma's CLI fetches its native schema engine before every command, which fails without
// internet. Generating the client does not need that engine, so we point the CLI at a stub that
// exits 1 (a stub that exits 0 would make migrate commands silently do nothing). See OFFLINE.md.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const result = spawnSync(process.execPath, [path.join(root, 'node_modules/prisma/build/index.js'), 'generate'], {
  cwd: root,
  stdio: ['ignore', 'inherit', 'inherit'],
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: path.join(root, 'scripts/schema-engine-stub.sh'),
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    CHECKPOINT_DISABLE: '1',
  },
});
process.exit(result.status ?? 1);
