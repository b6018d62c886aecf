'use client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { MessageSquare } from 'lucide-react';
import Link from 'next/link';
import { useParams, useRouter } from 'next/navigation';
import { ConfirmButton, ErrorNote, PageTitle } from '../../../../_ui/components';
import { EmptyState } from '../../../../_ui/empty-state';
import { formatDateTime } from '../../../../_ui/format';
import { ModelFacts } from '../../../../_ui/models/model-card';
import { ModelNotLoaded, useTeamModel } from '../../../../_ui/models/team-model';
import { refetchAfterChange } from '../../../../_ui/refresh';
import { atLeast } from '../../../../_ui/roles';
import { RunStateBadge } from '../../../../_ui/runs/run-parts';
import { useTeam } from '../../../../_ui/team-context';
import { useTRPC } from '../../../../trpc';

/**
 * An imported model: its card (family, size, context, vocabulary, attention, chat template), the
 * playground on it as imported, how to start a run from it, its files, the runs that start from
 * it, and its removal (admins, once no queued or running job needs it).
 */
export default function ModelPage() {
  const { modelId } = useParams<{ modelId: string }>();
  const team = useTeam();
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const base = `/teams/${team.id}`;
  const model = useTeamModel(modelId);
  const remove = useMutation(
    trpc.models.remove.mutationOptions({
      onSuccess: async () => {
        await refetchAfterChange(queryClient, trpc.models.list.queryKey({ teamId: team.id }));
        router.push(`${base}/models`);
      },
    }),
  );

  if (model.data === undefined) return <ModelNotLoaded model={model} modelId={modelId} />;
  const m = model.data;

  return (
    <>
      <p className="breadcrumb">
        <Link href={`${base}/models`}>Models</Link> /
      </p>
      <PageTitle title={m.name}>
        {atLeast(team.role, 'MEMBER') ? (
          <Link href={`${base}/models/${m.id}/playground`} className="btn">
            <MessageSquare size={15} aria-hidden="true" /> Open in playground
          </Link>
        ) : null}
        {atLeast(team.role, 'ADMIN') ? (
          <ConfirmButton
            label="Remove"
            question="Remove this model? Runs that finished keep their checkpoints, which can no longer load."
            confirmLabel="Yes, remove"
            pending={remove.isPending}
            onConfirm={() => remove.mutate({ teamId: team.id, modelId: m.id })}
          />
        ) : null}
      </PageTitle>
      <p className="muted lead">
        Imported {formatDateTime(m.createdAt)} · content <span className="hash" title={m.contentHash}>{m.contentHash.slice(0, 16)}</span>
      </p>
      <ErrorNote error={remove.error} />
      <div className="model-split">
        <section className="panel" aria-labelledby="card-title">
          <h2 id="card-title">Model</h2>
          <ModelFacts card={m.card} />
        </section>
        <section className="panel" aria-labelledby="start-title">
          <h2 id="start-title">Train it</h2>
          <p className="small">
            A run from this model fine-tunes LoRA adapters of rank 8 on every linear layer (<code>training.lora</code>; <code>false</code> trains every weight), through its{' '}
            {m.card.hasChatTemplate ? 'own chat template' : 'chat template — which this model lacks: import its chat or instruct version to train it'}.
          </p>
          <pre className="code-sample">{`npx whetstone run <environment> --model ${m.name}`}</pre>
          <h3 className="small">Files</h3>
          <ul className="small model-files">
            {m.card.files.map((f) => (
              <li key={f}>
                <code>{f}</code>
              </li>
            ))}
          </ul>
        </section>
      </div>
      <section className="panel" aria-labelledby="runs-title">
        <h2 id="runs-title">Runs from this model</h2>
        {m.jobs.length === 0 ? (
          <EmptyState title="No runs yet">Start one with the command above; it appears here.</EmptyState>
        ) : (
          <ul className="model-runs">
            {m.jobs.map((j) => (
              <li key={j.id}>
                <Link href={`${base}/runs/${j.id}`}>{j.experiment?.name ?? j.id}</Link> <span className="muted small">{j.kind.toLowerCase()}</span> <RunStateBadge state={j.state} />{' '}
                <span className="muted small">{formatDateTime(j.queuedAt)}</span>
              </li>
            ))}
          </ul>
        )}
      </section>
    </>
  );
}
