import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test, watchPage } from './fixtures';
import { errorNote, expectAccessible, samplerCheckpointOf, shoot, trpc } from './helpers';

// Models from the page: a folder missing its tokenizer is refused before anything is sent, a
// broken chat template is refused by the server's check naming the file, and the tiny Qwen2 chat
// fixture imports by the folder picker, shows its card in the list and on its page, and answers in
// the playground as imported. A short LoRA
// run from it writes a checkpoint that exports from the run page as a PEFT adapter (a tar the
// browser downloads), that the launcher says holds LoRA adapters on the model, and that opens in
// the playground, which names the model it was fine-tuned from.

const CHAT = path.join(import.meta.dirname, '../gpu-worker/engine/pretrained/fixtures/qwen2-chat');

/** A copy of the fixture model folder, named as a user's would be, optionally broken. */
function modelFolder(name: string, breakIt?: (dir: string) => void): string {
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'e2e-model-')), name);
  fs.cpSync(CHAT, dir, { recursive: true });
  fs.rmSync(path.join(dir, 'expected.json'));
  breakIt?.(dir);
  return dir;
}

test('models: import a Hugging Face folder from the page, refusals that say which file, the card', async ({ browser, ownerState, whetstone }, testInfo) => {
  test.setTimeout(420_000);
  const url = whetstone.url;
  const context = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  // The server's refusal of the broken template is a 400 on purpose.
  const watch = watchPage(page, { expectedStatuses: [400] });
  await page.goto(url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  const team = /\/teams\/([^/]+)$/.exec(page.url())![1];

  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Models' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Models' })).toBeVisible();
  await expect(page.getByRole('heading', { name: 'No models yet' })).toBeVisible();
  await expectAccessible(page, 'models, empty');
  await shoot(page, testInfo, 'models-empty');

  // The hub's form checks the repo's spelling before anything is asked of the server.
  const hub = page.getByRole('form', { name: 'Import from the Hugging Face hub' });
  await hub.getByLabel('Hugging Face repo').fill('just-a-name');
  await expect(hub.getByRole('alert')).toContainText('Write the repo as owner/name');
  await expect(hub.getByRole('button', { name: 'Import from the hub' })).toBeDisabled();
  await hub.getByLabel('Hugging Face repo').fill('hf:HuggingFaceTB/SmolLM2-135M-Instruct@main');
  await expect(hub.getByRole('alert')).toHaveCount(0);
  await expect(hub.getByLabel('Name in this team')).toHaveAttribute('placeholder', 'SmolLM2-135M-Instruct');
  await expect(hub.getByRole('button', { name: 'Import from the hub' })).toBeEnabled();
  await shoot(page, testInfo, 'models-hub-form');
  await hub.getByLabel('Hugging Face repo').fill('');

  const picker = page.getByLabel('Choose folder');
  // No tokenizer: refused here, nothing sent.
  await picker.setInputFiles(modelFolder('no-tokenizer', (d) => fs.rmSync(path.join(d, 'tokenizer.json'))));
  await expect(errorNote(page)).toContainText('The folder has no tokenizer.json');

  // A template that fails to render: every byte sent, then refused by the server's check.
  await picker.setInputFiles(modelFolder('bad-template', (d) => fs.writeFileSync(path.join(d, 'chat_template.jinja'), "{{ raise_exception('no chats') }}")));
  await expect(page.getByLabel('Name', { exact: true })).toHaveValue('bad-template');
  await page.getByRole('button', { name: 'Import', exact: true }).click();
  await expect(errorNote(page)).toContainText('chat template: it fails to render (no chats)', { timeout: 60_000 });

  // The real thing, by the folder picker and the keyboard.
  await picker.setInputFiles(modelFolder('tiny-qwen'));
  await expect(page.getByText(/6 files · \d/)).toBeVisible();
  await page.getByLabel('Name', { exact: true }).press('Enter');
  await expect(page.getByText(/Imported tiny-qwen \(qwen2, \d+\.\d k parameters\)/)).toBeVisible({ timeout: 60_000 });
  const table = page.getByRole('table', { name: 'Models' });
  await expect(table.getByRole('row', { name: /tiny-qwen qwen2/ })).toContainText('256');
  await shoot(page, testInfo, 'models-list');

  await table.getByRole('link', { name: 'tiny-qwen' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'tiny-qwen' })).toBeVisible();
  await expect(page.getByText('4 query heads over 2 key/value heads')).toBeVisible();
  await expect(page.getByText('npx whetstone run <environment> --model tiny-qwen')).toBeVisible();
  await expect(page.getByRole('heading', { name: 'No runs yet' })).toBeVisible();
  await expectAccessible(page, 'model page');
  await shoot(page, testInfo, 'model-page');
  expect(page.url()).toContain(`/teams/${team}/models/`);

  // The model itself in the playground, before any run: through its chat template, streamed.
  await page.getByRole('link', { name: 'Open in playground' }).click();
  await expect(page.getByRole('heading', { level: 1, name: /Playground · tiny-qwen/ })).toBeVisible();
  await expect(page.getByTestId('session-state')).toContainText('Ready', { timeout: 120_000 });
  await page.getByRole('textbox', { name: 'Message' }).fill('Pick a number.');
  await page.getByRole('textbox', { name: 'Max tokens' }).fill('8');
  await page.getByRole('textbox', { name: 'Message' }).press('Control+Enter');
  await expect(page.getByTestId('completion')).toHaveCount(1, { timeout: 60_000 });
  await expect(page.locator('[data-testid="completion"][data-done=""]')).toHaveCount(0, { timeout: 60_000 });
  await expect(page.getByTestId('completion')).toContainText(/seed 0 · \d+ tokens/);
  await expectAccessible(page, 'model playground');
  await shoot(page, testInfo, 'model-playground');
  await page.getByRole('link', { name: 'tiny-qwen' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'tiny-qwen' })).toBeVisible();
  // The playground's session is not a run of the model.
  await expect(page.getByRole('heading', { name: 'No runs yet' })).toBeVisible();

  // The launcher offers it as a starting point; the command line says --model.
  await page.goto(`${url}/teams/${team}/launch`);
  const start = page.getByLabel('Start from');
  await expect(start.locator('optgroup[label="Imported models"] option')).toHaveText([/tiny-qwen · qwen2 · \d+\.\d k/]);
  await start.selectOption({ label: (await start.locator('optgroup[label="Imported models"] option').textContent())! });
  await expect(page.getByText(/LoRA adapters \(rank 8, every linear layer\) on the frozen model/)).toBeVisible();
  await expect(page.getByText(/--model tiny-qwen/).first()).toBeVisible();
  await shoot(page, testInfo, 'launcher-from-model');

  // A one-step LoRA run from the model on the bandit template, submitted as the launcher does.
  const environments = await trpc<Array<{ name: string; versions: Array<{ id: string }> }>>(page, url, 'environments.list', 'query', { teamId: team });
  const bandit = environments.find((e) => e.name === 'bandit')!;
  const models = await trpc<Array<{ id: string; name: string }>>(page, url, 'models.list', 'query', { teamId: team });
  const job = await trpc<{ id: string }>(page, url, 'jobs.submit', 'mutation', {
    teamId: team,
    kind: 'TRAIN',
    config: { environmentVersionId: bandit.versions[0].id, baseModelId: models.find((m) => m.name === 'tiny-qwen')!.id, training: { steps: 1, batchSize: 2, groupSize: 2, checkpointEvery: 100, evalEpisodes: 0, warmStart: null } },
  });
  const checkpoint = await samplerCheckpointOf(page, url, team, job.id);
  await page.goto(`${url}/teams/${team}/runs/${job.id}?tab=checkpoints`);
  const row = page.getByRole('table', { name: 'Checkpoints of this run' }).getByRole('row', { name: new RegExp(checkpoint) });
  await row.getByRole('button', { name: /Export step \d+ as a Hugging Face folder/ }).click();
  const form = page.getByRole('form', { name: `Export checkpoint ${checkpoint} as a Hugging Face folder` });
  await form.getByLabel('PEFT adapter').check();
  await expectAccessible(page, 'export form');
  await shoot(page, testInfo, 'run-checkpoint-export');
  const downloading = page.waitForEvent('download', { timeout: 120_000 });
  await form.getByRole('button', { name: 'Download' }).click();
  const download = await downloading;
  expect(download.suggestedFilename()).toMatch(/^tiny-qwen-step\d+-peft\.tar$/);
  const tar = fs.readFileSync((await download.path())!);
  expect(tar.includes(Buffer.from('adapter_config.json'))).toBe(true);
  await expect(form.getByText(/tiny-qwen-step\d+-peft\.tar: \d+ files/)).toBeVisible();
  await shoot(page, testInfo, 'run-checkpoint-exported');

  // The launcher says what the checkpoint holds: the run's LoRA adapters, on the model they adapt.
  await page.goto(`${url}/teams/${team}/launch`);
  await page.getByLabel('Start from').selectOption(checkpoint);
  await expect(page.getByText(/^LoRA adapters \(rank 8, alpha 16 on attn, mlp\) on imported model tiny-qwen, which stays frozen/)).toBeVisible();
  await shoot(page, testInfo, 'launcher-from-checkpoint');

  // The playground names the model the checkpoint was fine-tuned from, and exports it too.
  await page.goto(`${url}/teams/${team}/playground/${checkpoint}`);
  await expect(page.getByText('fine-tuned from')).toBeVisible();
  await expect(page.getByRole('link', { name: 'tiny-qwen' })).toBeVisible();
  await expect(page.getByRole('button', { name: /Export step \d+ as a Hugging Face folder/ })).toBeVisible();
  // Beside it, the model as imported: what the fine-tuning changed, on the same prompt and seeds.
  await page.getByLabel('Compare with another checkpoint').selectOption({ label: 'tiny-qwen as imported (before fine-tuning)' });
  await expect(page).toHaveURL(/[?&]vs=model%3A/);
  await expect(page.getByRole('region', { name: 'B · tiny-qwen as imported' })).toBeVisible();
  await shoot(page, testInfo, 'playground-from-model');
  // Leaving ends the playground's sessions (the worker's one device is the next test's).
  await page.getByRole('link', { name: 'Checkpoints' }).first().click();
  await expect(page).toHaveURL(/\/checkpoints$/);
  await expect
    .poll(async () => (await trpc<{ runs: Array<{ state: string }> }>(page, url, 'runs.list', 'query', { teamId: team, kinds: ['INFERENCE'], limit: 10 })).runs.filter((r) => ['QUEUED', 'ASSIGNED', 'RUNNING'].includes(r.state)).length, { timeout: 60_000 })
    .toBe(0);
  watch.expectClean();

  // A model that is not the team's: its page and its playground say so alike, with the way back.
  const missing = await context.newPage();
  const missingWatch = watchPage(missing, { expectedStatuses: [404] });
  for (const where of ['', '/playground']) {
    await missing.goto(`${url}/teams/${team}/models/no-such-model${where}`);
    await expect(missing.getByRole('heading', { level: 1, name: 'No such model' })).toBeVisible();
    await expect(missing.getByRole('link', { name: 'See the team’s models' })).toBeVisible();
  }
  missingWatch.expectClean();
  await context.close();
});
