'use client';
import { useMutation } from '@tanstack/react-query';
import { Download } from 'lucide-react';
import { useState } from 'react';
import { EXPORT_FORMATS, type ExportFormat } from '../../../sdk/models';
import { useTRPC } from '../../trpc';
import { ErrorNote } from '../components';
import { formatBytes } from '../format';

const FORMAT_LABEL: Record<ExportFormat, { title: string; hint: string }> = {
  merged: { title: 'Merged', hint: 'model.safetensors with the adapters folded in: transformers, vLLM and llama.cpp load it as it is' },
  peft: { title: 'PEFT adapter', hint: 'adapter_model.safetensors and adapter_config.json, loaded with peft on the base model' },
};

/**
 * "Export…": a checkpoint of an imported model as a Hugging Face folder. The server writes the
 * folder (merging takes a while for a large model, so the page says so), then the browser
 * downloads it as a tar (GET /api/exports/<checkpoint>/<format>, with the session's cookie).
 */
export function ExportCheckpoint({ teamId, checkpoint }: { teamId: string; checkpoint: { id: string; step: number } }) {
  const trpc = useTRPC();
  const [open, setOpen] = useState(false);
  const [format, setFormat] = useState<ExportFormat>('merged');
  const exporting = useMutation(
    trpc.models.exportCheckpoint.mutationOptions({
      onSuccess: (answer) => {
        const a = document.createElement('a');
        a.href = answer.download;
        a.download = `${answer.name}.tar`;
        a.click();
      },
    }),
  );
  if (!open) {
    return (
      <button type="button" className="btn-small" onClick={() => { exporting.reset(); setOpen(true); }} aria-label={`Export step ${checkpoint.step} as a Hugging Face folder`}>
        <Download size={13} aria-hidden="true" /> Export…
      </button>
    );
  }
  return (
    <form
      className="inline-form export-form"
      aria-label={`Export checkpoint ${checkpoint.id} as a Hugging Face folder`}
      onSubmit={(e) => {
        e.preventDefault();
        exporting.mutate({ teamId, checkpointId: checkpoint.id, format });
      }}
    >
      <fieldset className="export-formats">
        <legend className="sr-only">Format</legend>
        {EXPORT_FORMATS.map((f) => (
          <label key={f} className="small" title={FORMAT_LABEL[f].hint}>
            <input type="radio" name={`format-${checkpoint.id}`} value={f} checked={format === f} onChange={() => setFormat(f)} /> {FORMAT_LABEL[f].title}
          </label>
        ))}
      </fieldset>
      <button type="submit" className="btn-small btn-primary" disabled={exporting.isPending} autoFocus>
        {exporting.isPending ? 'Exporting…' : 'Download'}
      </button>
      <button type="button" className="btn-small" onClick={() => setOpen(false)}>
        Close
      </button>
      <span className="export-status small muted" aria-live="polite">
        {exporting.isPending
          ? format === 'merged'
            ? 'Merging the adapters into the weights on the server…'
            : 'Writing the adapter on the server…'
          : exporting.data
            ? `${exporting.data.name}.tar: ${exporting.data.files.length} files, ${formatBytes(exporting.data.bytes)}`
            : ''}
      </span>
      <ErrorNote error={exporting.error} />
    </form>
  );
}
