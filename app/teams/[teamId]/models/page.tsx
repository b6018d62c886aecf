'use client';
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { ErrorNote, Loading, PageTitle } from '../../../_ui/components';
import { DataTable, type Column } from '../../../_ui/data-table';
import { EmptyState } from '../../../_ui/empty-state';
import { formatBytes, formatDateTime, formatRelative } from '../../../_ui/format';
import { HubImport } from '../../../_ui/models/hub-import';
import { ModelImport } from '../../../_ui/models/import-model';
import { formatParameters } from '../../../_ui/models/model-card';
import { atLeast } from '../../../_ui/roles';
import { SearchField } from '../../../_ui/search-field';
import { useTeam } from '../../../_ui/team-context';
import { useUrlState } from '../../../_ui/url-state';
import { useTRPC } from '../../../trpc';

type Model = NonNullable<ReturnType<typeof useModels>['data']>[number];

function useModels(teamId: string) {
  const trpc = useTRPC();
  return useQuery(trpc.models.list.queryOptions({ teamId }));
}

const columns = (base: string): Column<Model>[] => [
  { header: 'Name', cell: (m) => <Link href={`${base}/models/${m.id}`}>{m.name}</Link> },
  { header: 'Family', cell: (m) => <span className="badge">{m.card.family}</span> },
  { header: 'Parameters', num: true, cell: (m) => formatParameters(m.card.parameters) },
  { header: 'Context', num: true, cell: (m) => m.card.contextLength.toLocaleString() },
  { header: 'Vocabulary', num: true, cell: (m) => m.card.vocabSize.toLocaleString() },
  { header: 'Chat template', cell: (m) => (m.card.hasChatTemplate ? 'yes' : <span className="muted">none</span>) },
  { header: 'Size', num: true, cell: (m) => formatBytes(m.bytes) },
  { header: 'Runs', num: true, cell: (m) => m.runs },
  { header: 'Imported', className: 'muted small nowrap', title: (m) => formatDateTime(m.createdAt), cell: (m) => formatRelative(m.createdAt) },
];

/** The team's imported pretrained models: an import box for members, and the models with their cards. */
export default function ModelsPage() {
  const team = useTeam();
  const { params } = useUrlState();
  const q = params.get('q') ?? '';
  const models = useModels(team.id);
  const base = `/teams/${team.id}`;
  const mayImport = atLeast(team.role, 'MEMBER');
  const shown = (models.data ?? []).filter((m) => !q || `${m.name} ${m.card.family}`.toLowerCase().includes(q.toLowerCase()));

  return (
    <>
      <PageTitle title="Models" />
      <p className="muted lead">
        Pretrained language models to fine-tune with SFT, GRPO or PPO: Llama and Qwen families from Hugging Face folders. Runs start from one with LoRA adapters by default; their
        checkpoints hold the adapters and name the model.
      </p>
      {mayImport ? (
        <section className="panel" aria-labelledby="import-title">
          <h2 id="import-title">Import a model</h2>
          <ModelImport teamId={team.id} />
          <h3 className="hub-import-title">Or from the Hugging Face hub</h3>
          <HubImport teamId={team.id} />
        </section>
      ) : null}
      {models.isPending ? (
        <Loading label="Loading models…" />
      ) : models.isLoadingError ? (
        <ErrorNote error={models.error} />
      ) : models.data.length === 0 ? (
        <EmptyState title="No models yet">
          {mayImport ? (
            <>
              Drop a Hugging Face model folder on the box above, name a hub repo, or run <code>npx whetstone models import &lt;folder | hf:owner/name&gt; --name NAME</code>.
            </>
          ) : (
            'Members import pretrained models here; ask one to add the model you need.'
          )}
        </EmptyState>
      ) : (
        <>
          <SearchField label="Search models" placeholder="Search by name or family" />
          <DataTable panel label="Models" rows={shown} rowKey={(m) => m.id} columns={columns(base)} empty={<p className="muted">No model matches “{q}”.</p>} />
        </>
      )}
    </>
  );
}
