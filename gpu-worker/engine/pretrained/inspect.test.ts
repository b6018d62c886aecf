import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readSafetensors, writeSafetensors } from '../safetensors';
import { inspectHfFolder } from './inspect';

const CHAT = path.join(__dirname, 'fixtures', 'qwen2-chat');
let dirs: string[] = [];
afterEach(() => {
  dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true }));
  dirs = [];
});

/** A copy of the chat fixture to break. */
function copy(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inspect-'));
  dirs.push(dir);
  fs.cpSync(CHAT, dir, { recursive: true });
  fs.rmSync(path.join(dir, 'expected.json'));
  return dir;
}

describe('inspecting a model folder before import', () => {
  it('describes a whole model without loading its weights', async () => {
    const card = await inspectHfFolder(copy());
    expect(card).toMatchObject({ family: 'qwen2', contextLength: 256, vocabSize: 320, hasChatTemplate: true, dtypes: ['F32'] });
    expect(card.files).toEqual(['chat_template.jinja', 'config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    // 320 × 64 tied embedding, 2 layers of attention (q 64×64 + bias, k and v 32×64 + bias, o 64×64), MLP 3 × 96×64, norms.
    expect(card.parameters).toBe(320 * 64 + 2 * (64 * 64 + 64 + 2 * (32 * 64 + 32) + 64 * 64 + 3 * 96 * 64 + 2 * 64) + 64);
    expect(card.bytes).toBeGreaterThan(card.parameters * 4);
  });

  it('takes sharded weights, and refuses a shard the index lists but the folder lacks', async () => {
    const dir = copy();
    const { tensors } = await readSafetensors(path.join(dir, 'model.safetensors'));
    const names = [...tensors.keys()];
    const half = Math.floor(names.length / 2);
    const shards = [names.slice(0, half), names.slice(half)];
    const weightMap: Record<string, string> = {};
    for (const [i, shard] of shards.entries()) {
      const file = `model-0000${i + 1}-of-00002.safetensors`;
      await writeSafetensors(path.join(dir, file), new Map(shard.map((n) => [n, tensors.get(n)!])), {});
      for (const n of shard) weightMap[n] = file;
    }
    fs.rmSync(path.join(dir, 'model.safetensors'));
    fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'), JSON.stringify({ weight_map: weightMap }));
    const card = await inspectHfFolder(dir);
    expect(card.files.filter((f) => f.startsWith('model'))).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json']);
    fs.rmSync(path.join(dir, 'model-00002-of-00002.safetensors'));
    await expect(inspectHfFolder(dir)).rejects.toThrow(/lists shard "model-00002-of-00002\.safetensors", which is not in the folder/);
  });

  it('refuses each broken file naming it and the reason', async () => {
    const cases: Array<[string, (dir: string) => Promise<void> | void, RegExp]> = [
      ['no tokenizer', (d) => fs.rmSync(path.join(d, 'tokenizer.json')), /the folder has no tokenizer\.json/],
      ['an unreadable tokenizer', (d) => fs.writeFileSync(path.join(d, 'tokenizer.json'), '{"model": {"type": "Nonsense"}}'), /the tokenizer cannot be read/],
      ['a template that fails to render', (d) => fs.writeFileSync(path.join(d, 'chat_template.jinja'), "{{ raise_exception('no chats here') }}"), /chat template: it fails to render \(no chats here\)/],
      ['an unsupported architecture', (d) => fs.writeFileSync(path.join(d, 'config.json'), JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(d, 'config.json'), 'utf8')), model_type: 'gpt_neox' })), /config\.json.*gpt_neox/],
      [
        'a tensor of the wrong shape',
        async (d) => {
          const file = path.join(d, 'model.safetensors');
          const { tensors } = await readSafetensors(file);
          tensors.set('model.layers.1.mlp.up_proj.weight', { shape: [64, 96], data: tensors.get('model.layers.1.mlp.up_proj.weight')!.data });
          await writeSafetensors(file, tensors, {});
        },
        /model\.safetensors: tensor "model\.layers\.1\.mlp\.up_proj\.weight" has shape \[64,96\] but the config needs \[96,64\]/,
      ],
      [
        'a tensor missing',
        async (d) => {
          const file = path.join(d, 'model.safetensors');
          const { tensors } = await readSafetensors(file);
          tensors.delete('model.norm.weight');
          await writeSafetensors(file, tensors, {});
        },
        /tensor "model\.norm\.weight" is missing/,
      ],
      [
        'an unsupported dtype',
        (d) => {
          // Rewrite the header's first dtype to I8 (same width as nothing we read).
          const file = path.join(d, 'model.safetensors');
          const buf = fs.readFileSync(file);
          const len = Number(buf.readBigUInt64LE(0));
          const header = buf.subarray(8, 8 + len).toString('utf8').replace('"F32"', '"I64"');
          fs.writeFileSync(file, Buffer.concat([buf.subarray(0, 8), Buffer.from(header), buf.subarray(8 + len)]));
        },
        /dtype I64; only F32, F16 and BF16 are supported/,
      ],
      ['a tokenizer larger than the model', (d) => fs.writeFileSync(path.join(d, 'config.json'), JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(d, 'config.json'), 'utf8')), vocab_size: 300 })), /has 320 tokens but the model only 300|shape \[320,64\] but the config needs \[300,64\]/],
    ];
    for (const [what, breakIt, message] of cases) {
      const dir = copy();
      await breakIt(dir);
      await expect(inspectHfFolder(dir), what).rejects.toThrow(message);
    }
  });
});
