'use client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { CloudDownload } from 'lucide-react';
import Link from 'next/link';
import { useState } from 'react';
import { hubRepoSchema, hubRevisionSchema, modelNameFromRepo, modelNameSchema } from '../../../sdk/models';
import { useTRPC } from '../../trpc';
import { ErrorNote, Field, Notice } from '../components';
import { refetchAfterChange } from '../refresh';
import { formatParameters } from './model-card';

/** "owner/name", "hf:owner/name" or a hub URL, with an optional "@revision": the repo and revision. */
function parseSource(text: string): { repo: string; revision?: string } {
  const bare = text
    .trim()
    .replace(/^hf:/, '')
    .replace(/^https?:\/\/(www\.)?huggingface\.co\//, '')
    .replace(/\/+$/, '');
  const at = bare.indexOf('@');
  return at < 0 ? { repo: bare } : { repo: bare.slice(0, at), revision: bare.slice(at + 1) };
}

/**
 * Import from the Hugging Face hub: the server downloads the repo's model files itself (its
 * HF_ENDPOINT, with its HF_TOKEN for gated repos) and checks them as it checks an upload. The
 * call lasts as long as the download, so the form says what is happening meanwhile.
 */
export function HubImport({ teamId }: { teamId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [source, setSource] = useState('');
  const [name, setName] = useState('');
  const importing = useMutation(trpc.models.importFromHub.mutationOptions({ onSuccess: () => refetchAfterChange(queryClient, trpc.models.pathKey()) }));
  const { repo, revision } = parseSource(source);
  const problem =
    source.trim() === ''
      ? null
      : !hubRepoSchema.safeParse(repo).success
        ? 'Write the repo as owner/name, e.g. HuggingFaceTB/SmolLM2-135M-Instruct (add @revision for a branch, tag or commit).'
        : revision !== undefined && !hubRevisionSchema.safeParse(revision).success
          ? `“${revision}” is not a branch, tag or commit.`
          : name !== '' && !modelNameSchema.safeParse(name).success
            ? 'The name takes letters, digits and _ . - (up to 80), starting with a letter or digit.'
            : null;
  const ready = source.trim() !== '' && !problem && !importing.isPending;
  return (
    <form
      className="hub-import"
      aria-label="Import from the Hugging Face hub"
      onSubmit={(e) => {
        e.preventDefault();
        if (ready) importing.mutate({ teamId, repo, ...(revision ? { revision } : {}), ...(name ? { name } : {}) });
      }}
    >
      <div className="hub-import-fields">
        <Field label="Hugging Face repo" hint="owner/name[@revision]: the server downloads it (gated repos need the server's HF_TOKEN).">
          {(a) => <input {...a} className="mono" value={source} placeholder="HuggingFaceTB/SmolLM2-135M-Instruct" spellCheck={false} onChange={(e) => setSource(e.target.value)} aria-invalid={problem ? true : undefined} />}
        </Field>
        <Field label="Name in this team" hint="Default: the repo's name.">
          {(a) => <input {...a} value={name} placeholder={hubRepoSchema.safeParse(repo).success ? modelNameFromRepo(repo) : 'smollm2'} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <button type="submit" className="btn" disabled={!ready}>
          <CloudDownload size={15} aria-hidden="true" /> {importing.isPending ? 'Importing…' : 'Import from the hub'}
        </button>
      </div>
      {problem ? (
        <p className="field-error" role="alert">
          {problem}
        </p>
      ) : null}
      {importing.isPending ? <p className="hint" aria-live="polite">The server is downloading {repo} and checking every file; a large model takes minutes.</p> : null}
      <ErrorNote error={importing.error} />
      {importing.data ? (
        <Notice kind="success">
          Imported <strong>{importing.data.name}</strong> ({importing.data.card.family}, {formatParameters(importing.data.card.parameters)} parameters).{' '}
          <Link href={`/teams/${teamId}/models/${importing.data.modelId}`}>Open it</Link>
        </Notice>
      ) : null}
    </form>
  );
}
