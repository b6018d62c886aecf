import { describe, expect, it } from 'vitest';
import { BLANK_TEMPLATE, loadTemplate, TEMPLATE_NAMES, type TemplateName } from './load-template';

// Each template ships a README.md, which becomes the README of an environment made from it
// (server/environments/create-environment.ts; the editor renders it): what the task is, who
// plays, what pays, and how to try it by hand before training.
describe('template READMEs', () => {
  it.each<TemplateName | typeof BLANK_TEMPLATE>([...TEMPLATE_NAMES, BLANK_TEMPLATE])('%s: names its agents, reward and bots, and says how to try it in the play console', (name) => {
    const { readme, manifest } = loadTemplate(name);
    expect(readme).toMatch(new RegExp(`^# ${name}\\n`));
    expect(readme).toMatch(/\*\*Agents\*\*/);
    expect(readme).toMatch(/\*\*Rewards?\*\*/);
    expect(readme).toMatch(/\*\*Bots\*\*/);
    expect(readme).toMatch(/^## Try it in the play console$/m);
    // The agents it names are the manifest's.
    for (const agent of manifest.agents) expect(readme).toContain(`\`${agent}\``);
  });
});
