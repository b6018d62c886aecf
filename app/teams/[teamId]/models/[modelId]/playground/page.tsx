'use client';
import Link from 'next/link';
import { useParams } from 'next/navigation';
import { useCallback, useState } from 'react';
import { formatParameters } from '../../../../../_ui/models/model-card';
import { ModelNotLoaded, useTeamModel } from '../../../../../_ui/models/team-model';
import type { SessionPhase } from '../../../../../_ui/playground/inference-session';
import { PromptForm } from '../../../../../_ui/playground/prompt-form';
import { type PlaygroundRequest, SessionColumn } from '../../../../../_ui/playground/session-column';
import { useTeam } from '../../../../../_ui/team-context';

/**
 * An imported model in the playground, as it was imported (no fine-tuning): what it answers
 * before a run, through its own chat template or as raw text, with each token's probability and
 * alternatives. The same session a checkpoint's playground opens, on the model itself.
 */
export default function ModelPlaygroundPage() {
  const { modelId } = useParams<{ modelId: string }>();
  const team = useTeam();
  const base = `/teams/${team.id}`;
  const model = useTeamModel(modelId);
  const [colour, setColour] = useState(false);
  const [request, setRequest] = useState<PlaygroundRequest | null>(null);
  const [phase, setPhase] = useState<SessionPhase>('opening');
  const onPhase = useCallback((_key: string, p: SessionPhase) => setPhase(p), []);

  if (model.data === undefined) return <ModelNotLoaded model={model} modelId={modelId} />;
  const m = model.data;

  return (
    <>
      <p className="breadcrumb">
        <Link href={`${base}/models`}>Models</Link> / <Link href={`${base}/models/${m.id}`}>{m.name}</Link> / playground
      </p>
      <header className="run-head">
        <div>
          <h1>
            Playground <span className="muted">· {m.name}</span>
          </h1>
          <p className="run-head-line">
            imported model · {m.card.family} · {formatParameters(m.card.parameters)} parameters · context {m.card.contextLength.toLocaleString()}
            {m.card.hasChatTemplate ? ' · its own chat template' : ' · no chat template'}
          </p>
        </div>
      </header>
      <div className="playground">
        <PromptForm
          ready={phase === 'ready'}
          columns={1}
          example={null}
          systemHint="The system message, laid out by the model's chat template."
          messageHint="The user's turn: what the model answers."
          rawOnly={!m.card.hasChatTemplate}
          colour={colour}
          onColour={setColour}
          onSend={(r) => setRequest((prev) => ({ ...r, id: (prev?.id ?? 0) + 1 }))}
        />
        <div className="playground-results">
          <SessionColumn teamId={team.id} served={{ modelId: m.id }} title="Completions" request={request} colour={colour} onPhase={onPhase} />
        </div>
      </div>
    </>
  );
}
