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
