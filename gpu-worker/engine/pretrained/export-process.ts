/**
 * Writes one checkpoint of an imported model as a Hugging Face folder (export.ts): the server
 * starts this process by path (server/models/export-checkpoint.ts), so that it never imports the
 * engine, and so that loading and merging a model's weights never holds up its event loop.
 */
import { type ExportAnswer, type ExportCommand } from '../../../sdk/models';
import { initBackend } from '../backend';
import { loadCheckpoint } from '../checkpoint';
import { PretrainedDecoder } from './decoder';
import { exportHfFolder } from './export';
import { HfTokenizer } from './hf-tokenizer';

async function exportCheckpoint(command: ExportCommand): Promise<string[]> {
  await initBackend();
  const { model } = await loadCheckpoint(command.checkpointFile, {
    loadBase: async (ref, opts) => ({
      model: await PretrainedDecoder.fromFolder(command.baseFolder, { valueHead: opts.valueHead, base: ref }),
      tokenizer: HfTokenizer.fromFolder(command.baseFolder, ref.modelId),
    }),
  });
  if (!(model instanceof PretrainedDecoder)) throw new Error('this checkpoint is of the engine\'s own GPT, not of an imported model');
  return exportHfFolder(model, command.outFolder, { format: command.format, baseFolder: command.baseFolder, baseName: command.baseName });
}

process.on('message', (command: ExportCommand) => {
  void exportCheckpoint(command)
    .then((files): ExportAnswer => ({ ok: true, files }))
    .catch((err: unknown): ExportAnswer => ({ ok: false, error: err instanceof Error ? err.message : String(err) }))
    .then((answer) => process.send?.(answer, () => process.exit(0)));
});
process.send?.({ type: 'ready' });
