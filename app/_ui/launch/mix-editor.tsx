'use client';
import { Plus, RotateCcw, X } from 'lucide-react';
import { OPPONENT_CHECKPOINT } from '../../../sdk/training-config';
import type { CheckpointChoice } from '../environment-checkpoints';

/** What plays the seats a learner does not: a bot of the environment, the learner itself, or a saved checkpoint. */
const SELF_PLAY = 'frozen:policy';

function opponentLabel(key: string, checkpoints: CheckpointChoice[]): string {
  if (key === SELF_PLAY) return 'self-play (a frozen copy of the learning policy)';
  if (key.startsWith(OPPONENT_CHECKPOINT)) {
    const id = key.slice(OPPONENT_CHECKPOINT.length);
    return `frozen checkpoint ${checkpoints.find((c) => c.id === id)?.label ?? id}`;
  }
  return `bot ${key}`;
}

function parseNames(text: string): string[] | null {
  const names = text.split(',').map((s) => s.trim()).filter(Boolean);
  return text.trim() === '' ? null : names;
}

function parseMix(text: string): Record<string, number> | null {
  if (text.trim() === '') return null;
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, number>) : null;
  } catch {
    return null;
  }
}

/**
 * The multi-agent options as what they mean: which agents learn (checkboxes) and what plays the
 * other seats, as a mix of opponents with weights (each one's share of episodes shown): bots,
 * self-play, and frozen checkpoints (the team's sampler checkpoints of this environment). It edits
 * the same texts as the plain option fields (`learners`: names, `opponents`: a JSON object), so
 * the command line, the JSON and the server's validation see exactly what the form shows.
 */
export function MixEditor({
  agents,
  bots,
  checkpoints,
  learnersText,
  opponentsText,
  manifestLearners,
  manifestOpponents,
  errors,
  onChange,
}: {
  agents: string[];
  bots: string[];
  /** The team's sampler checkpoints of this environment, newest first. */
  checkpoints: CheckpointChoice[];
  learnersText: string;
  opponentsText: string;
  manifestLearners: string[] | undefined;
  manifestOpponents: Record<string, number> | undefined;
  errors: { learners?: string; opponents?: string };
  onChange: (name: 'learners' | 'opponents', text: string) => void;
}) {
  const learners = parseNames(learnersText) ?? manifestLearners ?? agents.slice(0, 1);
  const mix = parseMix(opponentsText) ?? manifestOpponents ?? {};
  const total = Object.values(mix).reduce((a, w) => a + (w > 0 ? w : 0), 0);
  const choices = [...bots, SELF_PLAY];
  const unused = choices.filter((c) => !(c in mix));
  const unusedCheckpoints = checkpoints.filter((c) => !(`${OPPONENT_CHECKPOINT}${c.id}` in mix));
  const label = (key: string) => opponentLabel(key, checkpoints);
  const setMix = (next: Record<string, number>) => onChange('opponents', JSON.stringify(next));
  const seatsLeft = agents.length - learners.length;

  return (
    <div className="mix-editor">
      <fieldset className="field">
        <legend>Agents that learn</legend>
        <div className="checks">
          {agents.map((a) => (
            <label key={a}>
              <input
                type="checkbox"
                checked={learners.includes(a)}
                onChange={(e) => onChange('learners', (e.target.checked ? agents.filter((x) => x === a || learners.includes(x)) : learners.filter((x) => x !== a)).join(', '))}
              />{' '}
              {a}
            </label>
          ))}
          {learnersText ? (
            <button type="button" className="icon-button" onClick={() => onChange('learners', '')} aria-label="Reset the learners" title="Back to the manifest's (or the default)">
              <RotateCcw size={14} aria-hidden="true" />
            </button>
          ) : null}
        </div>
        <p className="hint">
          The others are played by the opponent mix. {manifestLearners ? `Manifest: ${manifestLearners.join(', ')}.` : 'Default: the first agent.'}
        </p>
        {errors.learners ? <p className="field-error" role="alert">{errors.learners}</p> : null}
      </fieldset>

      {seatsLeft > 0 ? (
        <fieldset className="field">
          <legend>Opponent mix</legend>
          <table className="table mix-table">
            <thead>
              <tr>
                <th scope="col">Opponent</th>
                <th scope="col" className="num">Weight</th>
                <th scope="col" className="num">Share of episodes</th>
                <th scope="col"><span className="sr-only">Remove</span></th>
              </tr>
            </thead>
            <tbody>
              {Object.entries(mix).map(([key, weight]) => (
                <tr key={key}>
                  <th scope="row">{label(key)}</th>
                  <td className="num">
                    <input
                      type="number"
                      min={0}
                      step="any"
                      className="weight-input"
                      aria-label={`Weight of ${label(key)}`}
                      value={Number.isFinite(weight) ? weight : ''}
                      onChange={(e) => setMix({ ...mix, [key]: e.target.value === '' ? 0 : Number(e.target.value) })}
                    />
                  </td>
                  <td className="num tabular">{total > 0 && weight > 0 ? `${Math.round((100 * weight) / total)}%` : '0%'}</td>
                  <td>
                    <button
                      type="button"
                      className="icon-button"
                      aria-label={`Remove ${label(key)}`}
                      onClick={() => setMix(Object.fromEntries(Object.entries(mix).filter(([k]) => k !== key)))}
                    >
                      <X size={14} aria-hidden="true" />
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {unused.length > 0 || unusedCheckpoints.length > 0 ? (
            <div className="inline-form">
              <label htmlFor="mix-add" className="sr-only">
                Opponent to add
              </label>
              <select
                id="mix-add"
                value=""
                onChange={(e) => {
                  if (e.target.value) setMix({ ...mix, [e.target.value]: 1 });
                }}
              >
                <option value="">Add an opponent…</option>
                {unused.map((c) => (
                  <option key={c} value={c}>
                    {label(c)}
                  </option>
                ))}
                {unusedCheckpoints.length > 0 ? (
                  <optgroup label="Frozen checkpoints (newest first)">
                    {unusedCheckpoints.map((c) => (
                      <option key={c.id} value={`${OPPONENT_CHECKPOINT}${c.id}`}>
                        frozen checkpoint {c.label}
                      </option>
                    ))}
                  </optgroup>
                ) : null}
              </select>
              <Plus size={14} aria-hidden="true" className="muted" />
              {opponentsText ? (
                <button type="button" className="btn-small" onClick={() => onChange('opponents', '')}>
                  <RotateCcw size={13} aria-hidden="true" /> Back to the manifest’s mix
                </button>
              ) : null}
            </div>
          ) : null}
          <p className="hint">
            Each episode draws what plays the other seats by these weights. Self-play plays a frozen copy of the learning policy, refreshed every 10 steps; a frozen checkpoint is a saved one that never learns (it needs the policy’s tokenizer and at least its context length). {manifestOpponents ? `Manifest: ${Object.entries(manifestOpponents).map(([k, w]) => `${k} ${w}`).join(', ')}.` : ''}
          </p>
          {errors.opponents ? <p className="field-error" role="alert">{errors.opponents}</p> : null}
        </fieldset>
      ) : null}
    </div>
  );
}
