import { Fragment } from 'react';
import { type ModelCard } from '../../../sdk/models';
import { formatBytes } from '../format';

/** 134,515,008 → "134.5 M"; 1.5e9 → "1.50 B". */
export function formatParameters(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e8 ? 0 : 1)} M`;
  return `${(n / 1e3).toFixed(1)} k`;
}

/** What a model is, as a definition list: the figures a researcher picks a model by. */
export function ModelFacts({ card }: { card: ModelCard }) {
  const facts: [string, string][] = [
    ['Family', card.family],
    ['Parameters', formatParameters(card.parameters)],
    ['Context', `${card.contextLength.toLocaleString()} tokens`],
    ['Vocabulary', `${card.vocabSize.toLocaleString()} tokens`],
    ['Layers', String(card.layers)],
    ['Width', String(card.hiddenSize)],
    ['Attention', card.kvHeads === card.heads ? `${card.heads} heads` : `${card.heads} query heads over ${card.kvHeads} key/value heads`],
    ['Head', card.tiedEmbeddings ? 'tied to the embedding' : 'its own'],
    ['Chat template', card.hasChatTemplate ? 'yes' : 'none: runs need one (the playground takes raw prompts)'],
    ['Stored as', `${card.dtypes.join(', ')} · ${formatBytes(card.bytes)}`],
  ];
  return (
    <dl className="facts">
      {facts.map(([k, v]) => (
        <Fragment key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </Fragment>
      ))}
    </dl>
  );
}
