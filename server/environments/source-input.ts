import { z } from 'zod';

// An environment's code and manifest as the API takes them: saved as a version
// (environments.saveVersion), or played unsaved from the editor (play.open's draft).

const MAX_FILE_CHARS = 200_000;
const filePath = z.string().regex(/^(?!\/)(?!.*\.\.)[A-Za-z0-9_./-]{1,200}\.ts$/, 'a relative path ending in .ts');

export const environmentSourceInput = {
  entry: filePath,
  files: z.record(filePath, z.string().max(MAX_FILE_CHARS)).refine((f) => Object.keys(f).length >= 1 && Object.keys(f).length <= 50, '1 to 50 files'),
  manifest: z.record(z.string(), z.unknown()),
};
