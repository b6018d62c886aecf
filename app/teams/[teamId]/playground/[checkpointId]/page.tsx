'use client';
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useParams, useRouter, useSearchParams } from 'next/navigation';
import { useCallback, useMemo, useState } from 'react';
import { ErrorNote, Loading } from '../../../../_ui/components';
import { NotFound } from '../../../../_ui/empty-state';
import { isNotFound } from '../../../../_ui/errors';
import { formatBytes } from '../../../../_ui/format';
import type { EnvironmentDescription } from '../../../../../sdk/dry-run-report';
import { PlayPanel } from '../../../../_ui/editor/play-panel';
import { ExportCheckpoint } from '../../../../_ui/models/export-checkpoint';
import { atLeast } from '../../../../_ui/roles';
import { servedKey, servedOf, type SessionPhase } from '../../../../_ui/playground/inference-session';
import { PromptForm } from '../../../../_ui/playground/prompt-form';
import { type PlaygroundRequest, SessionColumn } from '../../../../_ui/playground/session-column';
import { WatchGame } from '../../../../_ui/playground/watch-game';
import { useTeam } from '../../../../_ui/team-context';
import { useTRPC } from '../../../../trpc';

/**
 * The inference playground: a checkpoint loaded on a worker (an inference session), a prompt in
 * the policy's chat format (the environment's system prompt and an observation, pre-filled from
 * its dry run), sampling controls, and completions streaming token by token with each token's
 * probability and alternatives. `?vs=<checkpoint>` puts a second checkpoint beside it (A/B), on
 * the same prompt and seeds; for a checkpoint of an imported model, `?vs=model:<id>` puts the model
 * as it was imported beside it (what the fine-tuning changed).
 */
export default function PlaygroundPage() {
  const { checkpointId } = useParams<{ checkpointId: string }>();
  const search = useSearchParams();
  const router = useRouter();
  const team = useTeam();
  const trpc = useTRPC();
  const base = `/teams/${team.id}`;
  const vs = search.get('vs');

  const info = useQuery({ ...trpc.inference.checkpoint.queryOptions({ teamId: team.id, checkpointId }), retry: (n, e) => !isNotFound(e) && n < 2 });
  const run = useQuery({
    ...trpc.runs.summary.queryOptions({ teamId: team.id, jobId: info.data?.checkpoint.jobId ?? '' }),
    enabled: Boolean(info.data?.checkpoint.jobId),
  });
  const others = useQuery(trpc.runs.teamCheckpoints.queryOptions({ teamId: team.id, kind: 'SAMPLER', offset: 0, limit: 100 }));
  const versionId = info.data?.environment?.versionId ?? '';
  const version = useQuery({ ...trpc.environments.version.queryOptions({ teamId: team.id, versionId }), enabled: versionId !== '' });
  const description = (version.data?.validation as { description?: EnvironmentDescription } | null | undefined)?.description ?? null;

  const [colour, setColour] = useState(false);
  const [request, setRequest] = useState<PlaygroundRequest | null>(null);
  const [phases, setPhases] = useState<Record<string, SessionPhase>>({});
  const example = info.data?.example;
  const start = useMemo(() => (example ? { system: example.system, message: example.observation } : null), [example]);

  const onPhase = useCallback((id: string, phase: SessionPhase) => setPhases((p) => (p[id] === phase ? p : { ...p, [id]: phase })), []);
  const columns = vs && vs !== checkpointId ? [checkpointId, vs] : [checkpointId];
  const ready = columns.every((c) => phases[c] === 'ready');

  if (info.error && isNotFound(info.error)) {
    return <NotFound kind="checkpoint" id={checkpointId} teamName={team.name} back={{ href: `${base}/checkpoints`, label: 'See the team’s checkpoints' }} />;
  }
  if (info.isLoadingError) return <ErrorNote error={info.error} />;
  if (!info.data) return <Loading label="Loading the checkpoint…" />;

  const { checkpoint, environment, model } = info.data;
  const label = (id: string) => {
    if (model && id === servedKey({ modelId: model.id })) return `B · ${model.name} as imported`;
    const c = others.data?.checkpoints.find((x) => x.id === id);
    if (id === checkpointId) return `A · step ${checkpoint.step}`;
    return c ? `B · ${c.job?.environmentName ?? 'checkpoint'} step ${c.step}` : `B · ${id}`;
  };
  const setVs = (id: string) => {
    const url = new URLSearchParams(search.toString());
    if (id) url.set('vs', id);
    else url.delete('vs');
    router.replace(`?${url.toString()}`);
  };

  return (
    <>
      <p className="breadcrumb">
        <Link href={`${base}/checkpoints`}>Checkpoints</Link>
        {checkpoint.jobId ? (
          <>
            {' '}/ <Link href={`${base}/runs/${checkpoint.jobId}?tab=checkpoints`}>run {checkpoint.jobId}</Link>
          </>
        ) : null}{' '}
        / playground
      </p>
      <header className="run-head">
        <div>
          <h1>
            Playground <span className="muted">· {environment ? `${environment.name} v${environment.version}` : 'checkpoint'} step {checkpoint.step}</span>
          </h1>
          <p className="run-head-line">
            {checkpoint.kind.toLowerCase()} checkpoint {checkpoint.id} · {formatBytes(checkpoint.bytes)}
            {checkpoint.isAdapter ? ' · LoRA adapter' : ''}
            {model ? (
              <>
                {' · fine-tuned from '}
                <Link href={`${base}/models/${model.id}`}>{model.name}</Link>
              </>
            ) : null}
            {run.data ? ` · ${run.data.algorithm ?? run.data.kind.toLowerCase()} run by ${run.data.owner.name}` : ''}
          </p>
        </div>
        <div className="actions">
          {model && checkpoint.kind === 'SAMPLER' && atLeast(team.role, 'MEMBER') ? <ExportCheckpoint teamId={team.id} checkpoint={checkpoint} /> : null}
          <label className="small">
            Compare with{' '}
            <select value={vs ?? ''} onChange={(e) => setVs(e.target.value)} aria-label="Compare with another checkpoint">
              <option value="">nothing (one checkpoint)</option>
              {model ? <option value={servedKey({ modelId: model.id })}>{model.name} as imported (before fine-tuning)</option> : null}
              {(others.data?.checkpoints ?? [])
                .filter((c) => c.id !== checkpointId)
                .map((c) => (
                  <option key={c.id} value={c.id}>
                    {c.job?.environmentName ?? 'checkpoint'} · step {c.step} · run {c.job?.id ?? 'deleted'}
                  </option>
                ))}
            </select>
          </label>
        </div>
      </header>

      <div className={`playground${columns.length > 1 ? ' playground-ab' : ''}`}>
        <PromptForm
          ready={ready}
          columns={columns.length}
          example={start}
          systemHint={environment ? `The system prompt ${environment.name}'s policy reads (from its dry run); edit freely.` : 'The system message.'}
          colour={colour}
          onColour={setColour}
          onSend={(r) => setRequest((prev) => ({ ...r, id: (prev?.id ?? 0) + 1 }))}
        />

        <div className="playground-results">
          {columns.map((id) => (
            <SessionColumn key={id} teamId={team.id} served={servedOf(id)} title={columns.length > 1 ? label(id) : 'Completions'} request={request} colour={colour} onPhase={onPhase} />
          ))}
        </div>
      </div>

      {environment && description ? (
        <section className="panel" aria-labelledby="play-env-title">
          <h2 id="play-env-title">Play {environment.name} with this checkpoint</h2>
          <p className="hint">
            The environment in its sandbox, turn by turn, with this checkpoint in the other seats (play against it{description.agents.length > 1 ? ' on the board' : ''}) or playing a whole
            episode by itself (&ldquo;Let it play&rdquo;), as training played it: the same prompts, legal-move masking and temperature.
          </p>
          {description.agents.length === 2 ? (
            <WatchGame
              teamId={team.id}
              environmentId={environment.id}
              versionId={environment.versionId}
              description={description}
              checkpointId={checkpointId}
              against={vs && vs !== checkpointId && 'checkpointId' in servedOf(vs) ? vs : null}
            />
          ) : null}
          <PlayPanel
            teamId={team.id}
            environmentId={environment.id}
            versionId={environment.versionId}
            draft={null}
            description={description}
            onReveal={(at) => router.push(`${base}/environments/${environment.id}?file=${encodeURIComponent(at.file)}&line=${at.line}`)}
            preferred={`checkpoint:${checkpointId}`}
          />
        </section>
      ) : null}
    </>
  );
}
