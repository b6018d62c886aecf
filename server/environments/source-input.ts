import { z } from 'zod';

// An environment's code and manifest as the API takes them: saved as a version
// (environments.saveVersion), or played unsaved from the editor (play.open's draft).

const MAX_FILE_CHARS = 200_000;
const relativePath = (ending: string, what: string) => z.string().regex(new RegExp(`^(?!/)(?!.*\\.\\.)[A-Za-z0-9_./-]{1,200}\\.(${ending})$`), `a relative path ending in ${what}`);
/** Code: the files the sandbox compiles. */
const codePath = relativePath('ts', '.ts');
/** Code, or Markdown beside it (a README): documents are kept with the version, never compiled. */
const filePath = relativePath('ts|md', '.ts or .md');

export const environmentSourceInput = {
  entry: codePath,
  // None at all is an HTTP environment's right (its code runs on its servers); code needs its entry
  // file, which the save and the play console check against the manifest.
  files: z.record(filePath, z.string().max(MAX_FILE_CHARS)).refine((f) => Object.keys(f).length <= 50, 'at most 50 files'),
  manifest: z.record(z.string(), z.unknown()),
};
