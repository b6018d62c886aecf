'use client';
import { useState, type FormEvent } from 'react';
import { ConfirmButton, ErrorNote, Field, Loading, SecretBox, StatusBadge } from './components';
import { EXPIRY_DAYS, formatDate } from './format';

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

function tokenStatus(t: WorkerTokenRow): string {
  if (t.revokedAt) return 'revoked';
  if (t.expiresAt && new Date(t.expiresAt) < new Date()) return 'expired';
  return 'active';
}

/** Registration tokens of a worker pool: create (shown once), list, revoke. */
export function WorkerTokens(props: Props) {
  const [name, setName] = useState('');
  const [days, setDays] = useState(30);
  const [shown, setShown] = useState<{ name: string; token: string } | null>(null);
  const origin = typeof window === 'undefined' ? '' : window.location.origin;

  async function submit(e: FormEvent) {
    e.preventDefault();
    setShown(null);
    try {
      const created = await props.create({ name: name.trim(), ...(days ? { expiresInDays: days } : {}) });
      setShown({ name: created.name, token: created.token });
      setName('');
    } catch {
      // The mutation's error is shown next to the form.
    }
  }

  return (
    <>
      <form className="form form-row" onSubmit={submit} aria-label={`Create a registration token for ${props.poolLabel}`}>
        <Field label="Token name" hint="e.g. the machine or cluster it is for.">
          {(p) => <input {...p} required maxLength={80} value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <Field label="Expires after">
          {(p) => (
            <select {...p} value={days} onChange={(e) => setDays(Number(e.target.value))}>
              {EXPIRY_DAYS.map((x) => (
                <option key={x.days} value={x.days}>
                  {x.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <div className="field field-submit">
          <button type="submit" className="btn btn-primary" disabled={props.createPending}>
            {props.createPending ? 'Creating…' : 'Create token'}
          </button>
        </div>
      </form>
      <ErrorNote error={props.createError} />
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
                const status = tokenStatus(t);
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
