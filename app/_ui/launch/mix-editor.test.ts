import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { MixEditor } from './mix-editor';

const render = (props: Partial<Parameters<typeof MixEditor>[0]>) =>
  renderToStaticMarkup(
    createElement(MixEditor, {
      agents: ['black', 'white'],
      bots: ['random', 'scripted'],
      checkpoints: [{ id: 'ck1', label: 'train cmg4x1a2b3 · step 40' }, { id: 'ck2', label: 'train cmg4x1a2b3 · step 20' }],
      learnersText: '',
      opponentsText: '',
      manifestLearners: ['black'],
      manifestOpponents: { random: 0.5, scripted: 0.5 },
      errors: {},
      onChange: () => {},
      ...props,
    }),
  );

describe('the opponent mix editor', () => {
  it('shows the manifest’s learners and mix, each opponent with its share of episodes, and offers what is left', () => {
    const html = render({});
    expect(html).toMatch(/<input type="checkbox" checked=""\/> black/);
    expect(html).toMatch(/<input type="checkbox"\/> white/);
    expect(html).toContain('<th scope="row">bot random</th>');
    expect(html.match(/50%/g)).toHaveLength(2);
    expect(html).toContain('<option value="frozen:policy">self-play (a frozen copy of the learning policy)</option>');
  });

  it('reads the form’s texts over the manifest: shares follow the weights, and an all-learner run has no mix', () => {
    const html = render({ opponentsText: '{"scripted":3,"frozen:policy":1}' });
    expect(html).toContain('75%');
    expect(html).toContain('25%');
    expect(html).not.toContain('<th scope="row">bot random</th>');
    expect(html).toContain('<option value="random">bot random</option>');
    expect(render({ learnersText: 'black, white' })).not.toContain('Opponent mix');
  });

  it('offers the environment’s checkpoints as frozen opponents, and a row names the one it plays', () => {
    const html = render({ opponentsText: '{"scripted":1,"checkpoint:ck1":1}' });
    expect(html).toContain('<th scope="row">frozen checkpoint train cmg4x1a2b3 · step 40</th>');
    expect(html).toContain('<optgroup label="Frozen checkpoints (newest first)"><option value="checkpoint:ck2">frozen checkpoint train cmg4x1a2b3 · step 20</option></optgroup>');
    expect(html).not.toContain('<option value="checkpoint:ck1">');
    // A checkpoint the list no longer shows (older than its page) is named by its id.
    expect(render({ opponentsText: '{"checkpoint:old":1}' })).toContain('<th scope="row">frozen checkpoint old</th>');
  });
});
