'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ConfirmButton, ErrorNote, Loading, PageTitle, SecretBox, StatusBadge } from '../../../_ui/components';
import { CreateSecretForm, credentialStatus } from '../../../_ui/credentials';
import { formatDate, formatRelative } from '../../../_ui/format';
import { atLeast } from '../../../_ui/roles';
import { useTeam } from '../../../_ui/team-context';
import { useTRPC } from '../../../trpc';
import { refetchAfterChange } from '../../../_ui/refresh';

export default function ApiKeysPage() {
  const trpc = useTRPC();
  const team = useTeam();
  const queryClient = useQueryClient();
  const keys = useQuery(trpc.apiKeys.list.queryOptions({ teamId: team.id }));
  const invalidate = () => refetchAfterChange(queryClient, trpc.apiKeys.list.queryKey({ teamId: team.id }));
  const create = useMutation(trpc.apiKeys.create.mutationOptions({ onSuccess: invalidate }));
  const revoke = useMutation(trpc.apiKeys.revoke.mutationOptions({ onSuccess: invalidate }));
  const [shown, setShown] = useState<{ name: string; key: string } | null>(null);
  const isAdmin = atLeast(team.role, 'ADMIN');
  const origin = typeof window === 'undefined' ? '' : window.location.origin;

  async function createKey(input: { name: string; expiresInDays?: number }) {
    setShown(null);
    const created = await create.mutateAsync({ teamId: team.id, ...input });
    setShown({ name: created.name, key: created.key });
  }

  return (
    <>
      <PageTitle title="API keys" />
      <p className="muted lead">
        Keys let scripts and the CLI call Whetstone as you, in {team.name} only, with your role here ({team.role.toLowerCase()}
        ), never more. Send a key as <code>Authorization: Bearer wsk_…</code>.
      </p>
      <section className="panel" aria-labelledby="new-key-title">
        <h2 id="new-key-title">Create a key</h2>
        <CreateSecretForm
          ariaLabel="Create an API key"
          nameLabel="Name"
          nameHint="What uses it, e.g. “laptop CLI”."
          submitLabel="Create key"
          defaultDays={90}
          pending={create.isPending}
          error={create.error}
          onCreate={createKey}
        />
        {shown ? (
          <SecretBox label={`New API key “${shown.name}”`} value={shown.key} onDismiss={() => setShown(null)}>
            <p className="hint">
              This key is shown only once: Whetstone keeps only its hash. Copy it now. To try it:
            </p>
            <pre className="code-sample">{`curl -H "Authorization: Bearer $WHETSTONE_API_KEY" ${origin}/api/trpc/account.me`}</pre>
          </SecretBox>
        ) : null}
      </section>

      <section className="panel" aria-labelledby="keys-title">
        <h2 id="keys-title">{isAdmin ? 'Keys in this team' : 'Your keys'}</h2>
        <ErrorNote error={revoke.error} />
        {keys.isPending ? (
          <Loading />
        ) : keys.isLoadingError ? (
          <ErrorNote error={keys.error} />
        ) : keys.data.length === 0 ? (
          <p className="muted">No API keys yet.</p>
        ) : (
          <div className="table-wrap">
            <table className="table" aria-label="API keys">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  {isAdmin ? <th scope="col">Owner</th> : null}
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Status</th>
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.data.map((k) => {
                  const status = credentialStatus(k);
                  return (
                    <tr key={k.id}>
                      <th scope="row">{k.name}</th>
                      <td>
                        <code>{k.prefix}…</code>
                      </td>
                      {isAdmin ? <td>{k.user.name}</td> : null}
                      <td>{formatDate(k.createdAt)}</td>
                      <td>{k.lastUsedAt ? formatRelative(k.lastUsedAt) : <span className="muted">never</span>}</td>
                      <td>{k.expiresAt ? formatDate(k.expiresAt) : <span className="muted">never</span>}</td>
                      <td>
                        <StatusBadge status={status} />
                      </td>
                      <td className="row-actions">
                        {status !== 'revoked' ? (
                          <ConfirmButton
                            label="Revoke"
                            accessibleName={`Revoke ${k.name}`}
                            question={`Revoke “${k.name}”? Scripts using it stop working.`}
                            confirmLabel="Yes, revoke"
                            pending={revoke.isPending}
                            onConfirm={() => revoke.mutate({ teamId: team.id, keyId: k.id })}
                          />
                        ) : null}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}
