import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from './paths';

export const version: string = (
  JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }
).version;
