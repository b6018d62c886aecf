/**
 * Checks one model folder and answers with its card: the server starts this process by path
 * (server/models/inspect-model.ts) so that it never imports the engine, and so that parsing a
 * large tokenizer and many safetensors headers never holds up its event loop.
 */
import { type InspectAnswer, type InspectCommand } from '../../../sdk/models';
import { inspectHfFolder } from './inspect';

process.on('message', (command: InspectCommand) => {
  void inspectHfFolder(command.folder)
    .then((card): InspectAnswer => ({ ok: true, card }))
    .catch((err: unknown): InspectAnswer => ({ ok: false, error: err instanceof Error ? err.message : String(err) }))
    .then((answer) => process.send?.(answer, () => process.exit(0)));
});
process.send?.({ type: 'ready' });
