'use client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { FileUp } from 'lucide-react';
import Link from 'next/link';
import { useId, useRef, useState, type DragEvent, type FormEvent } from 'react';
import { useTRPC } from '../../trpc';
import { ErrorNote, Field, Notice } from '../components';
import { formatBytes } from '../format';
import { refetchAfterChange } from '../refresh';

/** The server's limit (server/datasets/store-version.ts: MAX_DATASET_CHARS), checked here before sending. */
const MAX_CHARS = 15_000_000;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_./-]{0,119}$/;

interface LineProblem {
  line: number;
  message: string;
}

/** A refused upload's bad lines, as datasets.upload answers them (error.data.lineProblems). */
function lineProblemsOf(error: unknown): { problems: LineProblem[]; total: number } | null {
  const data = (error as { data?: { lineProblems?: { problems: LineProblem[]; total: number } | null } } | null)?.data;
  return data?.lineProblems ?? null;
}

/** A dataset name from a file's name: the characters the server takes, the rest as dashes. */
function nameFromFile(fileName: string): string {
  const cleaned = fileName.replace(/[^A-Za-z0-9_./-]/g, '-').replace(/\.\.+/g, '.').replace(/^[^A-Za-z0-9]+/, '');
  return cleaned.slice(0, 120) || 'dataset.jsonl';
}

/**
 * Uploads a JSONL file as a dataset's next version: dropped on the zone or chosen with the
 * picker. A refused upload lists each bad line with its number and reason, and keeps the file
 * and the fields, so the user fixes the file and sends it again. `fixedName`: a new version of
 * that dataset (its page), where the name is not asked.
 */
export function DatasetUpload({ teamId, fixedName }: { teamId: string; fixedName?: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const inputId = useId();
  const problemsId = useId();
  const fileInput = useRef<HTMLInputElement>(null);
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState(fixedName ?? '');
  const [nameTouched, setNameTouched] = useState(!!fixedName);
  const [description, setDescription] = useState('');
  const [over, setOver] = useState(false);
  const [localError, setLocalError] = useState<string | null>(null);
  const upload = useMutation(
    trpc.datasets.upload.mutationOptions({
      onSuccess: async () => {
        setFile(null);
        if (fileInput.current) fileInput.current.value = '';
        if (!fixedName) {
          setName('');
          setNameTouched(false);
        }
        setDescription('');
        await refetchAfterChange(queryClient, trpc.datasets.pathKey());
      },
    }),
  );

  const choose = (chosen: File | null | undefined) => {
    if (!chosen) return;
    setFile(chosen);
    setLocalError(null);
    upload.reset();
    if (!nameTouched) setName(nameFromFile(chosen.name));
  };
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setOver(false);
    choose(e.dataTransfer.files[0]);
  };

  async function submit(e: FormEvent) {
    e.preventDefault();
    setLocalError(null);
    upload.reset();
    if (!file) return setLocalError('Choose a .jsonl file first: drop it on the box or use “Choose file”.');
    if (!NAME.test(name) || name.includes('..')) return setLocalError('Name: letters, digits and _ . / - (up to 120), starting with a letter or digit.');
    if (file.size > MAX_CHARS * 4) return setLocalError(`This file is ${formatBytes(file.size)}: a dataset is at most ${MAX_CHARS.toLocaleString()} characters. Split it into several datasets.`);
    const text = await file.text();
    if (text.length > MAX_CHARS) return setLocalError(`This file has ${text.length.toLocaleString()} characters: a dataset is at most ${MAX_CHARS.toLocaleString()}. Split it into several datasets.`);
    if (text.trim() === '') return setLocalError('This file is empty: a dataset needs at least one JSON row.');
    upload.mutate({ teamId, name, jsonl: text, ...(description ? { description } : {}) });
  }

  const refused = lineProblemsOf(upload.error);
  const stored = upload.data;
  return (
    <form className="form upload-form" onSubmit={submit} aria-label={fixedName ? `Upload a new version of ${fixedName}` : 'Upload a dataset'}>
      <div
        className="dropzone"
        data-over={over}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
      >
        <FileUp size={28} className="dropzone-icon" aria-hidden="true" />
        <div className="dropzone-text">
          {file ? (
            <>
              <strong className="dropzone-file">{file.name}</strong>
              <span className="muted small">{formatBytes(file.size)} · drop another file or choose one to replace it</span>
            </>
          ) : (
            <>
              <strong>Drop a JSONL file here</strong>
              <span className="muted small">One JSON object per line, e.g. {'{"prompt": "2+2=", "completion": "4"}'}. Up to 15 million characters.</span>
            </>
          )}
        </div>
        <label className="btn file-button" htmlFor={inputId}>
          Choose file
          <input
            ref={fileInput}
            id={inputId}
            className="file-input"
            type="file"
            accept=".jsonl,.ndjson,.json,.txt,application/jsonl,application/x-ndjson,text/plain"
            onChange={(e) => choose(e.target.files?.[0])}
          />
        </label>
      </div>
      <div className="form form-row">
        {fixedName ? null : (
          <Field label="Name" hint="Uploading again under the same name makes a new version. Name it <environment>/<file> to feed a data-dependent environment.">
            {(props) => (
              <input
                {...props}
                required
                value={name}
                maxLength={120}
                placeholder="sums/train.jsonl"
                onChange={(e) => {
                  setName(e.target.value);
                  setNameTouched(true);
                }}
              />
            )}
          </Field>
        )}
        <Field label="Description (optional)">
          {(props) => <input {...props} value={description} maxLength={2000} onChange={(e) => setDescription(e.target.value)} />}
        </Field>
        <div className="field field-submit">
          <button type="submit" className="btn btn-primary" disabled={upload.isPending} aria-describedby={refused ? problemsId : undefined}>
            {upload.isPending ? 'Uploading…' : fixedName ? 'Upload new version' : 'Upload'}
          </button>
        </div>
      </div>
      {localError ? <ErrorNote error={localError} /> : null}
      {refused ? (
        <div className="notice notice-error" role="alert" id={problemsId}>
          <strong>
            Not stored: {refused.total} {refused.total === 1 ? 'line has a problem' : 'lines have problems'}
          </strong>
          {refused.total > refused.problems.length ? ` (the first ${refused.problems.length} are listed)` : ''}. Fix {refused.total === 1 ? 'it' : 'them'} in the file and upload it again; nothing was stored.
          <ol className="line-problems" aria-label="Problems by line" tabIndex={0}>
            {refused.problems.map((p) => (
              <li key={p.line}>
                <span className="line-number">line {p.line}</span>
                <span>{p.message}</span>
              </li>
            ))}
          </ol>
        </div>
      ) : upload.error ? (
        <ErrorNote error={upload.error} />
      ) : null}
      {stored ? (
        <Notice kind="success">
          {stored.created ? (
            <>
              Stored <strong>{upload.variables?.name}</strong> version {stored.version}: {stored.rowCount} rows, {formatBytes(stored.bytes)}.{' '}
            </>
          ) : (
            <>Identical to version {stored.version}, so nothing new was stored (versions are kept by content). </>
          )}
          <Link href={`/teams/${teamId}/datasets/${stored.datasetId}?version=${stored.version}`}>Open it</Link>
        </Notice>
      ) : null}
    </form>
  );
}
