'use client';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { FolderUp } from 'lucide-react';
import Link from 'next/link';
import { useId, useRef, useState, type DragEvent, type FormEvent } from 'react';
import { modelFileNames } from '../../../sdk/models';
import { useTRPC } from '../../trpc';
import { ErrorNote, Field, Notice } from '../components';
import { formatBytes } from '../format';
import { refetchAfterChange } from '../refresh';
import { formatParameters } from './model-card';

/** The server's rule for a model's name (sdk/models.ts modelNameSchema), checked before sending. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$/;
/** Read and hashed this much at a time: a model's weights never sit in the page's memory whole. */
const READ_BYTES = 8 * 2 ** 20;

type Phase = { step: 'idle' } | { step: 'hashing' | 'sending'; done: number; total: number; file: string } | { step: 'checking' };

/** The files of a model folder to send, by the rule the CLI and the server's check follow (sdk/models.ts). */
async function modelFiles(all: File[]): Promise<File[]> {
  const byName = new Map(all.map((f) => [f.name, f]));
  try {
    const names = await modelFileNames((name) => byName.has(name), () => byName.get('model.safetensors.index.json')!.text());
    return names.map((n) => byName.get(n)!);
  } catch (err) {
    const message = (err as Error).message;
    throw new Error(`${message.charAt(0).toUpperCase()}${message.slice(1)}.`, { cause: err });
  }
}

/** Every file of a dropped folder (one level: a model folder is flat). */
async function droppedFiles(e: DragEvent): Promise<File[]> {
  const entries = [...e.dataTransfer.items].map((item) => item.webkitGetAsEntry?.()).filter((x): x is FileSystemEntry => !!x);
  const files: File[] = [];
  const fileOf = (entry: FileSystemFileEntry) => new Promise<File>((resolve, reject) => entry.file(resolve, reject));
  for (const entry of entries) {
    if (entry.isFile) files.push(await fileOf(entry as FileSystemFileEntry));
    else if (entry.isDirectory) {
      const reader = (entry as FileSystemDirectoryEntry).createReader();
      // readEntries answers in batches until an empty one.
      for (;;) {
        const batch = await new Promise<FileSystemEntry[]>((resolve, reject) => reader.readEntries(resolve, reject));
        if (batch.length === 0) break;
        for (const child of batch) if (child.isFile) files.push(await fileOf(child as FileSystemFileEntry));
      }
    }
  }
  return files;
}

function folderName(e: DragEvent | null, files: File[]): string {
  const dropped = e ? [...e.dataTransfer.items].map((i) => i.webkitGetAsEntry?.()).find((x) => x?.isDirectory)?.name : undefined;
  const picked = files[0]?.webkitRelativePath?.split('/')[0];
  return (dropped ?? picked ?? '').replace(/[^A-Za-z0-9_.-]/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 80);
}

function base64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/**
 * Imports a Hugging Face model folder: dropped, or chosen with the folder picker. The files are
 * hashed here, sent in chunks, and checked whole by the server (every tensor, the tokenizer, the
 * chat template) before the model exists; a refusal says which file and why, and keeps nothing.
 */
export function ModelImport({ teamId }: { teamId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const inputId = useId();
  const picker = useRef<HTMLInputElement>(null);
  const [files, setFiles] = useState<File[] | null>(null);
  const [name, setName] = useState('');
  const [over, setOver] = useState(false);
  const [phase, setPhase] = useState<Phase>({ step: 'idle' });
  const [error, setError] = useState<unknown>(null);
  const [imported, setImported] = useState<{ modelId: string; name: string; parameters: number; family: string } | null>(null);
  const begin = useMutation(trpc.models.beginImport.mutationOptions());
  const chunk = useMutation(trpc.models.uploadChunk.mutationOptions());
  const finish = useMutation(trpc.models.finishImport.mutationOptions());
  const abandon = useMutation(trpc.models.abandonImport.mutationOptions());

  const choose = async (all: File[], e: DragEvent | null) => {
    setError(null);
    setImported(null);
    try {
      setFiles(await modelFiles(all));
      const named = folderName(e, all);
      if (named) setName(named);
    } catch (err) {
      setFiles(null);
      setError(err);
    }
  };

  async function submit(e: FormEvent) {
    e.preventDefault();
    setError(null);
    setImported(null);
    if (!files) return setError('Choose a model folder first: drop it on the box or use “Choose folder”.');
    if (!NAME.test(name)) return setError('Name: letters, digits and _ . - (up to 80), starting with a letter or digit.');
    const total = files.reduce((sum, f) => sum + f.size, 0);
    let uploadId: string | null = null;
    try {
      const announced = [];
      let done = 0;
      for (const f of files) {
        const hash = sha256.create();
        for (let at = 0; at < f.size; at += READ_BYTES) {
          hash.update(new Uint8Array(await f.slice(at, at + READ_BYTES).arrayBuffer()));
          done += Math.min(READ_BYTES, f.size - at);
          setPhase({ step: 'hashing', done, total, file: f.name });
        }
        announced.push({ path: f.name, bytes: f.size, sha256: bytesToHex(hash.digest()) });
      }
      const started = await begin.mutateAsync({ teamId, name, files: announced });
      uploadId = started.uploadId;
      done = 0;
      for (const f of files) {
        for (let at = 0; at < f.size || (f.size === 0 && at === 0); at += started.chunkBytes) {
          const data = new Uint8Array(await f.slice(at, at + started.chunkBytes).arrayBuffer());
          // A chunk is written at its offset, so resending one after a lost answer is harmless.
          for (let attempt = 1; ; attempt++) {
            try {
              await chunk.mutateAsync({ teamId, uploadId, path: f.name, offset: at, data: base64(data) });
              break;
            } catch (err) {
              if (attempt === 3 || (err as { data?: { httpStatus?: number } }).data?.httpStatus === 400) throw err;
            }
          }
          done += data.length;
          setPhase({ step: 'sending', done, total, file: f.name });
          if (f.size === 0) break;
        }
      }
      setPhase({ step: 'checking' });
      // Finishing ends the upload on the server whatever its answer: nothing left to abandon.
      const finishing = uploadId;
      uploadId = null;
      const result = await finish.mutateAsync({ teamId, uploadId: finishing });
      setImported({ modelId: result.modelId, name, parameters: result.card.parameters, family: result.card.family });
      setFiles(null);
      setName('');
      if (picker.current) picker.current.value = '';
      await refetchAfterChange(queryClient, trpc.models.pathKey());
    } catch (err) {
      setError(err);
      if (uploadId) abandon.mutate({ teamId, uploadId });
    } finally {
      setPhase({ step: 'idle' });
    }
  }

  const busy = phase.step !== 'idle';
  const total = files?.reduce((sum, f) => sum + f.size, 0) ?? 0;
  return (
    <form className="form upload-form" onSubmit={submit} aria-label="Import a model">
      <div
        className="dropzone"
        data-over={over}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => {
          e.preventDefault();
          setOver(false);
          void droppedFiles(e).then((all) => choose(all, e));
        }}
      >
        <FolderUp size={28} className="dropzone-icon" aria-hidden="true" />
        <div className="dropzone-text">
          {files ? (
            <>
              <strong className="dropzone-file">{files.length} files · {formatBytes(total)}</strong>
              <span className="muted small">{files.map((f) => f.name).join(', ')}</span>
            </>
          ) : (
            <>
              <strong>Drop a Hugging Face model folder here</strong>
              <span className="muted small">Llama (3.x, SmolLM2, TinyLlama) or Qwen (2, 2.5, 3): config.json, the safetensors weights, tokenizer.json, tokenizer_config.json.</span>
            </>
          )}
        </div>
        <label className="btn file-button" htmlFor={inputId}>
          Choose folder
          <input
            ref={picker}
            id={inputId}
            className="file-input"
            type="file"
            multiple
            {...{ webkitdirectory: '' }}
            onChange={(e) => void choose([...(e.target.files ?? [])], null)}
          />
        </label>
      </div>
      <div className="form form-row">
        <Field label="Name" hint="How runs and the launcher call it; unique in the team.">
          {(props) => <input {...props} required value={name} maxLength={80} placeholder="smollm2-135m" onChange={(e) => setName(e.target.value)} />}
        </Field>
        <div className="field field-submit">
          <button type="submit" className="btn btn-primary" disabled={busy}>
            {busy ? 'Importing…' : 'Import'}
          </button>
        </div>
      </div>
      {phase.step === 'hashing' || phase.step === 'sending' ? (
        <div className="import-progress" role="status">
          <progress max={phase.total} value={phase.done} aria-label={phase.step === 'hashing' ? 'Hashing the files' : 'Sending the files'} />
          <span className="muted small">
            {phase.step === 'hashing' ? 'Hashing' : 'Sending'} {phase.file}: {formatBytes(phase.done)} of {formatBytes(phase.total)}
          </span>
        </div>
      ) : phase.step === 'checking' ? (
        <p className="muted small" role="status">
          The server checks the whole model: every tensor’s shape and type, the tokenizer, the chat template…
        </p>
      ) : null}
      {error ? <ErrorNote error={error} /> : null}
      {imported ? (
        <Notice kind="success">
          Imported <strong>{imported.name}</strong> ({imported.family}, {formatParameters(imported.parameters)} parameters).{' '}
          <Link href={`/teams/${teamId}/models/${imported.modelId}`}>Open it</Link>
        </Notice>
      ) : null}
    </form>
  );
}
