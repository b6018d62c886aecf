'use client';
import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { errorMessage } from './errors';

/** An error from the API, next to the form or list it belongs to. Announced to screen readers. */
export function ErrorNote({ error, className }: { error: unknown; className?: string }) {
  if (!error) return null;
  return (
    <p className={`notice notice-error ${className ?? ''}`} role="alert">
      {typeof error === 'string' ? error : errorMessage(error)}
    </p>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="muted loading" role="status">
      <span className="spinner" aria-hidden="true" /> {label}
    </p>
  );
}

export function Notice({ kind = 'info', children }: { kind?: 'info' | 'success' | 'warning'; children: ReactNode }) {
  return (
    <div className={`notice notice-${kind}`} role={kind === 'success' ? 'status' : undefined}>
      {children}
    </div>
  );
}

/** A labelled form field: the label, the control, and an optional hint tied to it. */
export function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: ReactNode;
  children: (props: { id: string; 'aria-describedby'?: string }) => ReactNode;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({ id, 'aria-describedby': hint ? hintId : undefined })}
      {hint ? (
        <span className="hint" id={hintId}>
          {hint}
        </span>
      ) : null}
    </div>
  );
}

async function copyText(text: string, fallbackInput: HTMLInputElement | null): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // No clipboard API here (plain http on a network address): select and copy the old way.
    if (!fallbackInput) return false;
    fallbackInput.focus();
    fallbackInput.select();
    try {
      return document.execCommand('copy');
    } catch {
      return false;
    }
  }
}

/**
 * A secret or link shown once: read-only, selectable, with a Copy button. The parent decides
 * when it goes away (it is not kept anywhere else).
 */
export function SecretBox({
  label,
  value,
  children,
  onDismiss,
}: {
  label: string;
  value: string;
  children?: ReactNode;
  onDismiss?: () => void;
}) {
  const id = useId();
  const input = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  useEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, [value]);
  return (
    <div className="secret" role="region" aria-label={label}>
      <label htmlFor={id} className="secret-label">
        {label}
      </label>
      <div className="secret-row">
        <input id={id} ref={input} className="mono" readOnly value={value} onFocus={(e) => e.currentTarget.select()} />
        <button
          type="button"
          className="btn btn-primary"
          onClick={async () => setCopied((await copyText(value, input.current)) ? 'yes' : 'no')}
        >
          Copy
        </button>
        {onDismiss ? (
          <button type="button" className="btn" onClick={onDismiss}>
            Done
          </button>
        ) : null}
      </div>
      <p className="hint" aria-live="polite">
        {copied === 'yes' ? 'Copied to the clipboard.' : copied === 'no' ? 'Could not copy: select the text and copy it by hand.' : null}
      </p>
      {children}
    </div>
  );
}

/**
 * A destructive action in two steps: the first press asks, the second does it. Escape or
 * Cancel steps back. Focus moves to the confirming button so the keyboard flow is two presses.
 */
export function ConfirmButton({
  label,
  question,
  confirmLabel,
  onConfirm,
  pending,
  danger = true,
  disabled,
  accessibleName,
}: {
  label: string;
  question: string;
  confirmLabel: string;
  onConfirm: () => void;
  pending?: boolean;
  danger?: boolean;
  disabled?: boolean;
  /** A fuller name for the first button, e.g. "Remove Ada Lovelace". */
  accessibleName?: string;
}) {
  const [asking, setAsking] = useState(false);
  const confirmRef = useRef<HTMLButtonElement>(null);
  const openerRef = useRef<HTMLButtonElement>(null);
  const wasAsking = useRef(false);
  useEffect(() => {
    if (asking) confirmRef.current?.focus();
    else if (wasAsking.current) openerRef.current?.focus();
    wasAsking.current = asking;
  }, [asking]);
  if (!asking) {
    return (
      <button
        ref={openerRef}
        type="button"
        className={`btn btn-small ${danger ? 'btn-danger-quiet' : ''}`}
        onClick={() => setAsking(true)}
        disabled={disabled || pending}
        aria-label={accessibleName}
      >
        {label}
      </button>
    );
  }
  return (
    <span
      className="confirm"
      role="group"
      aria-label={question}
      onKeyDown={(e) => {
        if (e.key === 'Escape') setAsking(false);
      }}
    >
      <span className="confirm-question">{question}</span>
      <button
        ref={confirmRef}
        type="button"
        className={`btn btn-small ${danger ? 'btn-danger' : 'btn-primary'}`}
        disabled={pending}
        onClick={() => {
          onConfirm();
          setAsking(false);
        }}
      >
        {pending ? 'Working…' : confirmLabel}
      </button>
      <button type="button" className="btn btn-small" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

export function PageTitle({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="page-title">
      <h1>{title}</h1>
      {children ? <div className="page-title-side">{children}</div> : null}
    </div>
  );
}

export function RoleBadge({ role }: { role: string }) {
  return <span className={`badge badge-${role.toLowerCase()}`}>{role.charAt(0) + role.slice(1).toLowerCase()}</span>;
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-status-${status.toLowerCase()}`}>{status.toLowerCase()}</span>;
}

/**
 * Why something waits or failed, in the scheduler's or the cluster's words. A long one (Slurm's
 * refusal after the provider's backoff, say) shows three lines in a table; pointing at it or
 * tabbing to it shows it all, and assistive technology reads it all anyway.
 */
export function Reason({ text, tone = 'warn' }: { text: string; tone?: 'warn' | 'bad' }) {
  const long = text.length > 120;
  return (
    <span className={`reason reason-clamp${tone === 'bad' ? ' reason-bad' : ''}`} title={long ? text : undefined} tabIndex={long ? 0 : undefined}>
      {text}
    </span>
  );
}
