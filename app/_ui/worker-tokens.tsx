'use client';
import { useState } from 'react';
import { ConfirmButton, ErrorNote, Loading, SecretBox, StatusBadge } from './components';
import { CreateSecretForm, credentialStatus } from './credentials';
import { formatDate } from './format';

export interface WorkerTokenRow {
  id: string;
  name: string;
  prefix: string;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  _count: { workers: number };
}

interface Props {
  poolLabel: string;
  tokens: { data?: WorkerTokenRow[]; isPending: boolean; error: unknown };
  create: (input: { name: string; expiresInDays?: number }) => Promise<{ token: string; name: string }>;
  createPending: boolean;
  createError: unknown;
  revoke: (tokenId: string) => void;
  revokePending: boolean;
  revokeError: unknown;
}

/** Registration tokens of a worker pool: create (shown once), list, revoke. */
export function WorkerTokens(props: Props) {
  const [shown, setShown] = useState<{ name: string; token: string } | null>(null);
  const origin = typeof window === 'undefined' ? '' : window.location.origin;

  async function create(input: { name: string; expiresInDays?: number }) {
    setShown(null);
    const created = await props.create(input);
    setShown({ name: created.name, token: created.token });
  }

  return (
    <>
      <CreateSecretForm
        ariaLabel={`Create a registration token for ${props.poolLabel}`}
        nameLabel="Token name"
        nameHint="e.g. the machine or cluster it is for."
        submitLabel="Create token"
        defaultDays={30}
        pending={props.createPending}
        error={props.createError}
        onCreate={create}
      />
      {shown ? (
        <SecretBox label={`Registration token “${shown.name}”`} value={shown.token} onDismiss={() => setShown(null)}>
          <p className="hint">
            Shown only once. A worker daemon presents it to <code>{origin}/api/workers/register</code> to join {props.poolLabel}{' '}
            and receives a credential of its own. Revoking the token stops new registrations; workers already registered
            keep running until you revoke them.
          </p>
        </SecretBox>
      ) : null}
      <ErrorNote error={props.revokeError} />
      {props.tokens.isPending ? (
        <Loading />
      ) : props.tokens.error ? (
        <ErrorNote error={props.tokens.error} />
      ) : !props.tokens.data?.length ? (
        <p className="muted">No registration tokens yet.</p>
      ) : (
        <div className="table-wrap">
          <table className="table" aria-label={`Registration tokens for ${props.poolLabel}`}>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Token</th>
                <th scope="col">Workers</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {props.tokens.data.map((t) => {
                const status = credentialStatus(t);
                return (
                  <tr key={t.id}>
                    <th scope="row">{t.name}</th>
                    <td>
                      <code>{t.prefix}…</code>
                    </td>
                    <td>{t._count.workers}</td>
                    <td>{formatDate(t.createdAt)}</td>
                    <td>{t.expiresAt ? formatDate(t.expiresAt) : <span className="muted">never</span>}</td>
                    <td>
                      <StatusBadge status={status} />
                    </td>
                    <td className="row-actions">
                      {status !== 'revoked' ? (
                        <ConfirmButton
                          label="Revoke"
                          accessibleName={`Revoke token ${t.name}`}
                          question={`Revoke “${t.name}”? No new worker can register with it.`}
                          confirmLabel="Yes, revoke"
                          pending={props.revokePending}
                          onConfirm={() => props.revoke(t.id)}
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
    </>
  );
}
