import { cpSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { HfTokenizer } from './hf-tokenizer';

// The model's own tokenizer and chat template against transformers' answers on the same files
// (fixtures/tokenizer-chatml: a byte-level BPE with Qwen2.5's ChatML template; make_fixtures.py).

const FOLDER = join(import.meta.dirname, 'fixtures/tokenizer-chatml');
const expected = JSON.parse(readFileSync(join(FOLDER, 'expected.json'), 'utf8')) as {
  texts: Array<{ text: string; ids: number[]; decoded: string }>;
  chats: Array<{ messages: Array<{ role: string; content: string }>; add_generation_prompt: boolean; rendered: string; ids: number[] }>;
};

describe('a pretrained model’s tokenizer and chat template', () => {
  const tok = HfTokenizer.fromFolder(FOLDER);

  test.each(expected.texts)('encodes and decodes $text as transformers does', ({ text, ids, decoded }) => {
    expect(tok.encode(text)).toEqual(ids);
    expect(tok.decode(ids, { keepSpecial: true })).toBe(decoded);
  });

  test('renders every chat as transformers does, and tokenizes it to the same ids', () => {
    expect(tok.hasChatTemplate).toBe(true);
    for (const chat of expected.chats) {
      expect(tok.renderChat(chat.messages, chat.add_generation_prompt)).toBe(chat.rendered);
      expect(tok.encodeChat(chat.messages, chat.add_generation_prompt)).toEqual(chat.ids);
    }
  });

  test('a conversation\'s loss mask is 1 exactly on what the policy wrote: each assistant turn and its end of turn', () => {
    // Hand-checked on the fixture's ChatML renderings: the assistant's "42" and "<move>e2e4</move>"
    // with their <|im_end|>; never a header, a user's or system's text, or the newline after <|im_end|>.
    /** The trainable runs of ids, decoded. */
    const trained = (ids: number[], mask: number[]) => {
      const runs: number[][] = [];
      ids.forEach((id, i) => {
        if (mask[i] !== 1) return;
        if (i > 0 && mask[i - 1] === 1) runs[runs.length - 1].push(id);
        else runs.push([id]);
      });
      return runs.map((run) => tok.decode(run, { keepSpecial: true }));
    };
    const [, twoTurns, ended] = expected.chats;
    const a = tok.maskedChat(twoTurns.messages, twoTurns.add_generation_prompt);
    expect(a.ids).toEqual(twoTurns.ids);
    expect(trained(a.ids, a.mask)).toEqual(['42<|im_end|>']);
    const b = tok.maskedChat(ended.messages, ended.add_generation_prompt);
    expect(b.ids).toEqual(ended.ids);
    expect(trained(b.ids, b.mask)).toEqual(['<move>e2e4</move><|im_end|>']);
    expect(b.mask.at(-1)).toBe(0); // the newline the template adds after <|im_end|>
    // No assistant turn: nothing to train.
    const c = tok.maskedChat(expected.chats[0].messages, true);
    expect(c.ids).toEqual(expected.chats[0].ids);
    expect(c.mask.every((m) => m === 0)).toBe(true);
  });

  test('the end of an assistant turn is the template\'s special token, whatever eos_token says (a base model\'s <|endoftext|>); a turn with none is refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hf-tokenizer-'));
    try {
      cpSync(FOLDER, dir, { recursive: true });
      const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
      writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...config, eos_token: '<|endoftext|>' }));
      const base = HfTokenizer.fromFolder(dir);
      const [, twoTurns] = expected.chats;
      const { ids, mask } = base.maskedChat(twoTurns.messages, true);
      expect(base.decode(ids.filter((_, i) => mask[i] === 1), { keepSpecial: true })).toBe('42<|im_end|>');
      expect(base.eos).toBe(base.specialTokens['<|im_end|>']);
      // A template that closes no turn is refused when the tokenizer is read: no generation could end a turn.
      writeFileSync(join(dir, 'chat_template.jinja'), '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}');
      expect(() => HfTokenizer.fromFolder(dir)).toThrow(/message 2 \(the assistant's\) is not closed by a special token/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('reads a vocabulary the size of Qwen’s (151,665 tokens)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hf-tokenizer-'));
    try {
      cpSync(FOLDER, dir, { recursive: true });
      const json = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } };
      const size = Object.keys(json.model.vocab).length;
      for (let i = size; i < 151_665; i++) json.model.vocab[`tok${i}`] = i;
      writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(json));
      expect(HfTokenizer.fromFolder(dir).vocabSize).toBe(151_665);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a template that renders a conversation’s start otherwise once it goes on is refused when read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hf-tokenizer-'));
    try {
      cpSync(FOLDER, dir, { recursive: true });
      // As Qwen3's: an empty thinking block on the last assistant turn only.
      writeFileSync(
        join(dir, 'chat_template.jinja'),
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' and loop.last %}<think></think>{% endif %}{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
      );
      expect(() => HfTokenizer.fromFolder(dir)).toThrow(/renders the conversation up to .* other than as the start of the whole conversation/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a folder missing its tokenizer, or with a template that does not parse, is refused naming the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hf-tokenizer-'));
    try {
      cpSync(FOLDER, dir, { recursive: true });
      writeFileSync(join(dir, 'chat_template.jinja'), '{% for m in messages %}{{ m.content ');
      expect(() => HfTokenizer.fromFolder(dir)).toThrow(/^invalid chat template: it does not parse/);
      rmSync(join(dir, 'tokenizer.json'));
      expect(() => HfTokenizer.fromFolder(dir)).toThrow(`invalid tokenizer.json: missing from ${dir}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
