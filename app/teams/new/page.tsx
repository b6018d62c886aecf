'use client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { ErrorNote, Field, PageTitle } from '../../_ui/components';
import { AppShell } from '../../_ui/shell';
import { useTRPC } from '../../trpc';
import { refetchAfterChange } from '../../_ui/refresh';

export default function NewTeamPage() {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const create = useMutation(
    trpc.teams.create.mutationOptions({
      onSuccess: async (team) => {
        await refetchAfterChange(queryClient, trpc.account.me.queryKey());
        router.push(`/teams/${team.id}`);
      },
    }),
  );
  function submit(e: FormEvent) {
    e.preventDefault();
    create.mutate({ name: name.trim() });
  }
  return (
    <AppShell narrow>
      <PageTitle title="New team" />
      <section className="panel">
        <form className="form" onSubmit={submit} aria-label="Create a team">
          <Field label="Team name" hint="You will be its owner; invite others from its Members page.">
            {(props) => <input {...props} required maxLength={80} value={name} onChange={(e) => setName(e.target.value)} autoFocus />}
          </Field>
          <ErrorNote error={create.error} />
          <div className="actions">
            <button type="submit" className="btn btn-primary" disabled={create.isPending}>
              {create.isPending ? 'Creating…' : 'Create team'}
            </button>
          </div>
        </form>
      </section>
    </AppShell>
  );
}
