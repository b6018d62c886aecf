'use client';
import { useState, type FormEvent } from 'react';
import { ErrorNote, Field } from './components';
import { EXPIRY_DAYS } from './format';

/** A key or token: revoked, expired or active. */
export function credentialStatus(c: { revokedAt: Date | null; expiresAt: Date | null }): string {
  if (c.revokedAt) return 'revoked';
  if (c.expiresAt && new Date(c.expiresAt) < new Date()) return 'expired';
  return 'active';
}

/**
 * The form that makes a named, expiring secret (API key, worker token). `onCreate` resolves
 * when it was made (the name field then clears) and rejects on error, shown under the form.
 */
export function CreateSecretForm(props: {
  ariaLabel: string;
  nameLabel: string;
  nameHint: string;
  submitLabel: string;
  defaultDays: number;
  pending: boolean;
  error: unknown;
  onCreate: (input: { name: string; expiresInDays?: number }) => Promise<unknown>;
}) {
  const [name, setName] = useState('');
  const [days, setDays] = useState(props.defaultDays);

  async function submit(e: FormEvent) {
    e.preventDefault();
    try {
      await props.onCreate({ name: name.trim(), ...(days ? { expiresInDays: days } : {}) });
      setName('');
    } catch {
      // The mutation's error is shown next to the form.
    }
  }

  return (
    <>
      <form className="form form-row" onSubmit={submit} aria-label={props.ariaLabel}>
        <Field label={props.nameLabel} hint={props.nameHint}>
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
          <button type="submit" className="btn btn-primary" disabled={props.pending}>
            {props.pending ? 'Creating…' : props.submitLabel}
          </button>
        </div>
      </form>
      <ErrorNote error={props.error} />
    </>
  );
}
