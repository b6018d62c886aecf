import type { Algorithm, OptionDoc } from '../../../sdk/training-config';

/** A field's text as typed, turned into the option's value; undefined when empty (the default applies). */
export function parseField(doc: OptionDoc, text: string): { value?: unknown; error?: string } {
  const t = text.trim();
  if (t === '') return {};
  switch (doc.input.kind) {
    case 'number': {
      const n = Number(t);
      if (!Number.isFinite(n)) return { error: 'a number' };
      return { value: n };
    }
    case 'boolean':
      return t === 'true' || t === 'false' ? { value: t === 'true' } : { error: 'true or false' };
    case 'choice':
      return { value: t };
    case 'names':
      return { value: t.split(',').map((s) => s.trim()).filter(Boolean) };
    case 'weights':
    case 'json':
      try {
        return { value: JSON.parse(t) };
      } catch {
        return { error: doc.input.kind === 'weights' ? 'JSON such as {"random": 1, "scripted": 1}' : 'JSON' };
      }
  }
}

/** The overrides a form holds, nested the way a job's `training` is written (`model.width` → model: { width }). */
export function nestOverrides(flat: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(flat)) {
    if (name.startsWith('model.')) out.model = { ...((out.model as Record<string, unknown>) ?? {}), [name.slice(6)]: value };
    else out[name] = value;
  }
  return out;
}

/** Flattens a job's `training` (model options as `model.<name>`), for "Duplicate". */
export function flattenOverrides(training: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(training)) {
    if (k === 'model' && v && typeof v === 'object') for (const [m, mv] of Object.entries(v)) out[`model.${m}`] = mv;
    else if (k !== 'algorithm') out[k] = v;
  }
  return out;
}

const shellQuote = (s: string) => (/^[\w./:=@,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The equivalent CLI command line (sdk/cli: `whetstone run <environment> --algo … --set k=v`). */
export function cliCommand(o: { environment: string; algorithm: Algorithm; overrides: Record<string, unknown>; priority: number; from?: string; model?: string; saveAs?: string; dataset?: string; tags?: string[] }): string {
  const parts = ['npx whetstone run', shellQuote(o.environment), '--algo', o.algorithm];
  for (const [k, v] of Object.entries(o.overrides)) parts.push('--set', shellQuote(`${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`));
  if (o.from) parts.push('--from', o.from);
  if (o.model) parts.push('--model', o.model);
  if (o.saveAs) parts.push('--save-as', o.saveAs);
  if (o.dataset) parts.push('--dataset', o.dataset);
  for (const t of o.tags ?? []) parts.push('--tag', shellQuote(t));
  if (o.priority) parts.push('--priority', String(o.priority));
  return parts.join(' ');
}
