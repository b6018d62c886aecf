'use client';
import { useMutation } from '@tanstack/react-query';
import { FilePlus2 } from 'lucide-react';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import { ErrorNote, PageTitle } from '../../../../_ui/components';
import { useTeam } from '../../../../_ui/team-context';
import { useTRPC } from '../../../../trpc';

// The starting points environments.create takes (env-templates/), described for a first-time user.
const STARTS = [
  { id: 'bandit', title: 'Bandit', text: 'Single-turn, no data: pick the arm that pays for a colour. The smallest thing that learns — start here.' },
  { id: 'math', title: 'Math', text: 'Single-turn, reads a dataset: two-digit addition with an exact-match reward.' },
  { id: 'math-tools', title: 'Math with a tool', text: 'Multi-turn, reads a dataset: three-digit multiplication with a calculator tool the agent calls.' },
  { id: 'gomoku', title: 'Gomoku', text: 'Multi-turn, two agents: 9×9 five in a row, with scripted bots to play against.' },
  { id: 'blank', title: 'Blank', text: 'A minimal single-turn environment to write your own from.' },
  { id: 'http', title: 'Served over HTTP', text: 'A game server you run, in any language (OpenTinker’s protocol: /reset, /step). No code here: its address.' },
] as const;

/** The URLs typed one per line (or separated by spaces or commas). */
function urlsOf(text: string): string[] {
  return text.split(/[\s,]+/).filter(Boolean);
}

type Kind = 'single-turn' | 'multi-turn' | 'multi-agent';
const isHttpUrl = (u: string) => URL.canParse(u) && ['http:', 'https:'].includes(new URL(u).protocol);


export default function NewEnvironmentPage() {
  const team = useTeam();
  const trpc = useTRPC();
  const router = useRouter();
  const [start, setStart] = useState<(typeof STARTS)[number]['id']>('bandit');
  const [name, setName] = useState('');
  const [server, setServer] = useState({ urls: '', kind: 'single-turn' as Kind, agents: 'x, o', maxTurns: '', maxTokens: '', timeout: '', tokenSecret: '' });
  const urls = urlsOf(server.urls);
  const badUrl = urls.find((u) => !isHttpUrl(u));
  const agents = server.agents.split(',').map((a) => a.trim()).filter((a) => a !== '');
  const agentsOk = server.kind !== 'multi-agent' || (agents.length >= 2 && new Set(agents).size === agents.length && agents.every((a) => /^[A-Za-z_][A-Za-z0-9_-]*$/.test(a)));
  const serverOk = start !== 'http' || (urls.length > 0 && !badUrl && agentsOk);
  const numberOr = (text: string) => (text.trim() === '' ? undefined : Number(text));
  const create = useMutation(
    trpc.environments.create.mutationOptions({ onSuccess: (r) => router.push(`/teams/${team.id}/environments/${r.environmentId}`) }),
  );
  const nameOk = /^[a-z0-9][a-z0-9-]{0,62}$/.test(name);
  return (
    <>
      <PageTitle title="New environment" />
      <form
        className="new-env"
        aria-label="New environment"
        onSubmit={(e) => {
          e.preventDefault();
          if (!nameOk || !serverOk) return;
          const from =
            start === 'http'
              ? {
                  http: {
                    urls,
                    kind: server.kind,
                    agents: server.kind === 'multi-agent' ? agents : undefined,
                    maxTurns: server.kind === 'single-turn' ? undefined : numberOr(server.maxTurns),
                    maxTokens: numberOr(server.maxTokens),
                    timeoutSeconds: numberOr(server.timeout),
                    tokenSecret: server.tokenSecret.trim() || undefined,
                  },
                }
              : start === 'blank'
                ? { blank: true as const }
                : { template: start };
          create.mutate({ teamId: team.id, name, from });
        }}
      >
        <fieldset className="start-choices">
          <legend>Start from</legend>
          {STARTS.map((s) => (
            <label key={s.id} className={`start-card${s.id === start ? ' selected' : ''}`}>
              <input type="radio" name="start" value={s.id} checked={s.id === start} onChange={() => setStart(s.id)} />
              <strong>{s.title}</strong>
              <span className="muted small">{s.text}</span>
            </label>
          ))}
        </fieldset>
        {start === 'http' ? (
          <fieldset className="narrow-panel http-server-fields">
            <legend>The game’s server</legend>
            <div className="field">
              <label htmlFor="http-urls">Server URLs</label>
              <textarea id="http-urls" rows={2} value={server.urls} onChange={(e) => setServer({ ...server, urls: e.target.value })} placeholder="http://127.0.0.1:8081" aria-describedby="http-urls-hint" aria-invalid={!!badUrl} />
              <span className="hint" id="http-urls-hint">
                One per line; several server processes share the episodes. Saving plays a few episodes on them, so they must be running and reachable from Whetstone.
              </span>
              {badUrl ? <span className="field-error">{`“${badUrl}” is not an http(s) URL.`}</span> : null}
            </div>
            <div className="field-row">
              <label className="field">
                <span>Turns</span>
                <select value={server.kind} onChange={(e) => setServer({ ...server, kind: e.target.value as Kind })}>
                  <option value="single-turn">One (single-turn)</option>
                  <option value="multi-turn">Several (multi-turn)</option>
                  <option value="multi-agent">Several agents in turn (multi-agent)</option>
                </select>
              </label>
              {server.kind === 'multi-agent' ? (
                <label className="field">
                  <span>Agents, in turn order</span>
                  <input value={server.agents} onChange={(e) => setServer({ ...server, agents: e.target.value })} placeholder="x, o" aria-invalid={!agentsOk} spellCheck={false} />
                  {!agentsOk ? <span className="field-error">Two names or more, separated by commas (letters, digits, _ and -).</span> : null}
                </label>
              ) : null}
              {server.kind !== 'single-turn' ? (
                <label className="field">
                  <span>At most</span>
                  <input type="number" min={1} max={1000} value={server.maxTurns} placeholder="8" onChange={(e) => setServer({ ...server, maxTurns: e.target.value })} className="input-narrow" />
                </label>
              ) : null}
              <label className="field">
                <span>Tokens a turn</span>
                <input type="number" min={1} max={4096} value={server.maxTokens} placeholder="64" onChange={(e) => setServer({ ...server, maxTokens: e.target.value })} className="input-narrow" />
              </label>
              <label className="field">
                <span>Call timeout (s)</span>
                <input type="number" min={1} max={3600} value={server.timeout} placeholder="60" onChange={(e) => setServer({ ...server, timeout: e.target.value })} className="input-narrow" />
              </label>
            </div>
            <div className="field">
              <label htmlFor="http-token-secret">Bearer token from a team secret (optional)</label>
              <input id="http-token-secret" value={server.tokenSecret} onChange={(e) => setServer({ ...server, tokenSecret: e.target.value.toUpperCase() })} placeholder="GAME_TOKEN" autoComplete="off" spellCheck={false} aria-describedby="http-token-secret-hint" />
              <span className="hint" id="http-token-secret-hint">
                For a server behind a token: the secret’s name, such as GAME_TOKEN; its value, which an admin sets under Team → Secrets, is sent as <code>Authorization: Bearer …</code>.
              </span>
            </div>
          </fieldset>
        ) : null}
        <div className="field narrow-panel">
          <label htmlFor="env-name">Name</label>
          <input id="env-name" value={name} onChange={(e) => setName(e.target.value.toLowerCase())} placeholder={`my-${start}`} aria-describedby="env-name-hint" aria-invalid={name !== '' && !nameOk} autoFocus />
          <span className="hint" id="env-name-hint">
            Lower-case letters, digits and dashes; unique in the team.
          </span>
          {name !== '' && !nameOk ? <span className="field-error">Use lower-case letters, digits and dashes, starting with a letter or digit.</span> : null}
        </div>
        <ErrorNote error={create.error} />
        <div className="actions">
          <button type="submit" className="btn-primary" disabled={!nameOk || !serverOk || create.isPending}>
            <FilePlus2 size={16} aria-hidden="true" /> {create.isPending ? 'Creating and dry-running…' : 'Create environment'}
          </button>
        </div>
      </form>
    </>
  );
}
