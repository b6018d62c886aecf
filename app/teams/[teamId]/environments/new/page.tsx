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
] as const;

export default function NewEnvironmentPage() {
  const team = useTeam();
  const trpc = useTRPC();
  const router = useRouter();
  const [start, setStart] = useState<(typeof STARTS)[number]['id']>('bandit');
  const [name, setName] = useState('');
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
          if (!nameOk) return;
          create.mutate({ teamId: team.id, name, from: start === 'blank' ? { blank: true } : { template: start } });
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
          <button type="submit" className="btn-primary" disabled={!nameOk || create.isPending}>
            <FilePlus2 size={16} aria-hidden="true" /> {create.isPending ? 'Creating and dry-running…' : 'Create environment'}
          </button>
        </div>
      </form>
    </>
  );
}
