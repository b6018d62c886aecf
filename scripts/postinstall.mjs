// `npm ci`'s own step: the Prisma client (must succeed) and the engine's native kernels (optional).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const scripts = path.dirname(fileURLToPath(import.meta.url));
const run = (name) => spawnSync(process.execPath, [path.join(scripts, name)], { stdio: 'inherit' }).status ?? 1;
const prisma = run('prisma-generate.mjs');
if (prisma !== 0) process.exit(prisma);
run('build-native.mjs');
