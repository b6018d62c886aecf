/**
 * Tokenizers. The engine depends only on the `Tokenizer` interface; a tokenizer serialises to
 * JSON with a `kind` so `tokenizerFromJSON` can rebuild it from a checkpoint. A BPE tokenizer is
 * added by implementing the interface and one more case in `tokenizerFromJSON`.
 */
import { ConfigError } from './errors';

export type Role = 'system' | 'user' | 'assistant' | 'tool';
export const ROLES: readonly Role[] = ['system', 'user', 'assistant', 'tool'];

export interface ChatMessage {
  role: Role;
  content: string;
}

export interface TokenizerJSON {
  kind: string;
  [key: string]: unknown;
}

export interface Tokenizer {
  readonly kind: string;
  readonly vocabSize: number;
  readonly bos: number;
  readonly eos: number;
  readonly pad: number;
  /** Special token text → id (e.g. "<|user|>"). */
  readonly specialTokens: Readonly<Record<string, number>>;
  /** Plain text → ids. Special-token text in `text` is not interpreted. */
  encode(text: string): number[];
  /** Ids → text; special tokens are dropped unless `keepSpecial`. */
  decode(ids: readonly number[], opts?: { keepSpecial?: boolean }): string;
  /** Id of the separator that opens a turn of `role`. */
  roleToken(role: Role): number;
  toJSON(): TokenizerJSON;
}

/**
 * Chat layout shared by all tokenizers: BOS, then for each turn the role separator, the content
 * and EOS. With `generationPrompt` the assistant separator is appended so the model writes the
 * next assistant turn (which it ends with EOS).
 */
export function encodeChat(tok: Tokenizer, messages: readonly ChatMessage[], generationPrompt = true): number[] {
  const ids = [tok.bos];
  for (const m of messages) ids.push(tok.roleToken(m.role), ...tok.encode(m.content), tok.eos);
  if (generationPrompt) ids.push(tok.roleToken('assistant'));
  return ids;
}

const DEFAULT_ALPHABET = (() => {
  let s = '\n\t';
  for (let c = 32; c < 127; c++) s += String.fromCharCode(c);
  return s;
})();

/**
 * One token per character of a fixed alphabet (default: printable ASCII plus newline and tab),
 * after the special tokens <pad> <bos> <eos> <unk> and one separator per role. Characters outside
 * the alphabet map to <unk>.
 */
export class CharTokenizer implements Tokenizer {
  readonly kind = 'char';
  readonly specials: string[];
  readonly alphabet: string[];
  readonly pad = 0;
  readonly bos = 1;
  readonly eos = 2;
  readonly unk = 3;
  private readonly index = new Map<string, number>();

  constructor(alphabet: string = DEFAULT_ALPHABET) {
    this.specials = ['<pad>', '<bos>', '<eos>', '<unk>', ...ROLES.map((r) => `<|${r}|>`)];
    this.alphabet = [...new Set(Array.from(alphabet))];
    if (this.alphabet.length === 0) throw new ConfigError('tokenizer.alphabet', 'must not be empty');
    this.alphabet.forEach((ch, i) => this.index.set(ch, this.specials.length + i));
  }

  get vocabSize(): number {
    return this.specials.length + this.alphabet.length;
  }

  get specialTokens(): Record<string, number> {
    return Object.fromEntries(this.specials.map((s, i) => [s, i]));
  }

  encode(text: string): number[] {
    return Array.from(text, (ch) => this.index.get(ch) ?? this.unk);
  }

  decode(ids: readonly number[], opts: { keepSpecial?: boolean } = {}): string {
    let out = '';
    for (const id of ids) {
      if (id < this.specials.length) {
        if (opts.keepSpecial) out += this.specials[id];
      } else {
        out += this.alphabet[id - this.specials.length] ?? '';
      }
    }
    return out;
  }

  roleToken(role: Role): number {
    const i = ROLES.indexOf(role);
    if (i < 0) throw new ConfigError('role', `unknown role "${role}"`);
    return 4 + i;
  }

  toJSON(): TokenizerJSON {
    return { kind: 'char', alphabet: this.alphabet.join('') };
  }
}

export function tokenizerFromJSON(json: TokenizerJSON): Tokenizer {
  switch (json.kind) {
    case 'char':
      if (typeof json.alphabet !== 'string') throw new ConfigError('tokenizer.alphabet', 'must be a string');
      return new CharTokenizer(json.alphabet);
    default:
      throw new ConfigError('tokenizer.kind', `unknown tokenizer kind "${json.kind}"`);
  }
}
