'use client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { ErrorNote, Field, Notice, PageTitle } from '../../../_ui/components';
import { atLeast } from '../../../_ui/roles';
import { useTeam } from '../../../_ui/team-context';
import { useTRPC } from '../../../trpc';
import { refetchAfterChange } from '../../../_ui/refresh';

function Rename() {
  const trpc = useTRPC();
  const team = useTeam();
  const queryClient = useQueryClient();
  const [name, setName] = useState(team.name);
  const rename = useMutation(trpc.teams.rename.mutationOptions({ onSuccess: () => refetchAfterChange(queryClient) }));
  function submit(e: FormEvent) {
    e.preventDefault();
    rename.mutate({ teamId: team.id, name: name.trim() });
  }
  return (
    <form className="form form-row" onSubmit={submit} aria-label="Rename the team">
      <Field label="Team name">
        {(props) => <input {...props} required maxLength={80} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <div className="field field-submit">
        <button type="submit" className="btn btn-primary" disabled={rename.isPending || name.trim() === team.name}>
          {rename.isPending ? 'Saving…' : 'Rename'}
        </button>
      </div>
      <ErrorNote error={rename.error} />
      {rename.isSuccess && name.trim() === team.name ? <Notice kind="success">Renamed.</Notice> : null}
    </form>
  );
}

function DeleteTeam() {
  const trpc = useTRPC();
  const team = useTeam();
  const router = useRouter();
  const queryClient = useQueryClient();
  const [confirmName, setConfirmName] = useState('');
  const remove = useMutation(
    trpc.teams.delete.mutationOptions({
      onSuccess: async () => {
        // Only the team list: refetching this team's pages now would show "no such team".
        await refetchAfterChange(queryClient, trpc.account.me.queryKey());
        router.push('/');
      },
    }),
  );
  function submit(e: FormEvent) {
    e.preventDefault();
    remove.mutate({ teamId: team.id, confirmName });
  }
  return (
    <form className="form" onSubmit={submit} aria-label="Delete the team">
      <p>
        Deleting {team.name} deletes its environments, datasets, experiments, runs, checkpoints, keys and worker tokens.
        This cannot be undone.
      </p>
      <Field label={`Type “${team.name}” to confirm`}>
        {(props) => <input {...props} autoComplete="off" maxLength={80} value={confirmName} onChange={(e) => setConfirmName(e.target.value)} />}
      </Field>
      <ErrorNote error={remove.error} />
      <div className="actions">
        <button type="submit" className="btn btn-danger" disabled={remove.isPending || confirmName !== team.name}>
          {remove.isPending ? 'Deleting…' : 'Delete this team'}
        </button>
      </div>
    </form>
  );
}

export default function TeamSettingsPage() {
  const team = useTeam();
  return (
    <>
      <PageTitle title="Team settings" />
      <section className="panel" aria-labelledby="name-title">
        <h2 id="name-title">Name</h2>
        {atLeast(team.role, 'ADMIN') ? <Rename /> : <p>{team.name} <span className="muted small">(admins rename the team)</span></p>}
      </section>
      {team.role === 'OWNER' ? (
        <section className="panel panel-danger" aria-labelledby="delete-title">
          <h2 id="delete-title">Delete the team</h2>
          <DeleteTeam />
        </section>
      ) : null}
    </>
  );
}
