'use client';
import { useLayoutEffect, useRef, useState } from 'react';
import type { TokenAlternative } from '../../../sdk/live';

export interface ShownToken {
  text: string;
  logprob: number;
  alternatives?: TokenAlternative[];
}

/** A token's text made visible: a newline, a tab or a lone space would otherwise be nothing to hover. */
function visibleToken(text: string): string {
  if (text === '') return '∅';
  return text.replace(/\n/g, '⏎').replace(/\t/g, '⇥').replace(/^ $/, '·');
}

function percent(logprob: number): string {
  const p = Math.exp(logprob);
  return p >= 0.995 ? '100%' : p < 0.001 ? '<0.1%' : `${(p * 100).toFixed(p < 0.1 ? 1 : 0)}%`;
}

/**
 * A completion drawn token by token. Hovering a token (or stepping with ← → when the text has
 * focus) shows its probability and the likeliest alternatives at that position; `colour` shades
 * each token by how likely it was (the less likely, the warmer), as the hosted playgrounds do.
 */
export function TokenText({ tokens, colour, label }: { tokens: ShownToken[]; colour: boolean; label: string }) {
  const [active, setActive] = useState<number | null>(null);
  const [at, setAt] = useState<{ left: number; top: number } | null>(null);
  const text = useRef<HTMLDivElement>(null);
  const shown = active !== null && active < tokens.length ? tokens[active] : null;
  // The card sits under the token it describes, kept inside the text's box.
  useLayoutEffect(() => {
    const box = text.current;
    const span = active === null ? null : (box?.children[active] as HTMLElement | undefined);
    if (!box || !span) return setAt(null);
    setAt({ left: Math.max(0, Math.min(span.offsetLeft, box.clientWidth - 320)), top: span.offsetTop + span.offsetHeight + 4 });
  }, [active, tokens.length]);
  const onKey = (e: React.KeyboardEvent) => {
    if (tokens.length === 0) return;
    const step: Record<string, number> = { ArrowRight: 1, ArrowLeft: -1, Home: -tokens.length, End: tokens.length };
    if (e.key === 'Escape') return setActive(null);
    if (!(e.key in step)) return;
    e.preventDefault();
    setActive((a) => Math.min(tokens.length - 1, Math.max(0, (a ?? -1) + step[e.key])));
  };
  return (
    <div className="token-text-wrap">
      <div
        ref={text}
        className={`token-text${colour ? ' token-text-colour' : ''}`}
        tabIndex={0}
        role="group"
        aria-label={`${label}: ${tokens.length} tokens; use the arrow keys to inspect each one`}
        onKeyDown={onKey}
        onMouseLeave={() => setActive(null)}
        onBlur={() => setActive(null)}
      >
        {tokens.map((t, i) => (
          <span
            key={i}
            className={`token${i === active ? ' token-active' : ''}`}
            style={{ '--p': Math.exp(t.logprob).toFixed(3) } as React.CSSProperties}
            onMouseEnter={() => setActive(i)}
            data-testid="token"
          >
            {t.text}
          </span>
        ))}
      </div>
      <div className={`token-inspector small${shown ? '' : ' sr-only'}`} style={shown && at ? { left: at.left, top: at.top } : undefined} aria-live="polite" data-testid="token-inspector">
        {shown ? (
          <>
            <span>
              Token <code className="token-chip">{visibleToken(shown.text)}</code> <strong className="tabular">{percent(shown.logprob)}</strong>{' '}
              <span className="muted tabular">log-prob {shown.logprob.toFixed(3)}</span>
            </span>
            {shown.alternatives?.length ? (
              <span className="token-alternatives">
                <span className="muted">likeliest here:</span>
                {shown.alternatives.map((a, k) => (
                  <span key={k} className={a.text === shown.text ? 'token-alt token-alt-chosen' : 'token-alt'}>
                    <code className="token-chip">{visibleToken(a.text)}</code> <span className="tabular">{percent(a.logprob)}</span>
                  </span>
                ))}
              </span>
            ) : null}
          </>
        ) : null}
      </div>
    </div>
  );
}
