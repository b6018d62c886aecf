/**
 * Tokenizers. The engine depends only on the `Tokenizer` interface: the character tokenizer here
 * (for models trained from scratch) and a pretrained model's own tokenizer and chat template
 * (pretrained/hf-tokenizer.ts). A character tokenizer serialises to JSON with a `kind` so
 * `tokenizerFromJSON` can rebuild it from a checkpoint; a pretrained one is read from its model.
 *
 * Conversations are laid out by the tokenizer (`conversation`), never by the caller, because each
 * model has its own chat format: the character tokenizer's is BOS, then per message a role
 * separator, the content and EOS; a pretrained model's is its chat template.
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
  /** The id a raw prompt starts with, or -1 when the model has none (Qwen). Never sampled. */
  readonly bos: number;
  /** The id that ends the policy's turn (a chat model's end-of-turn token); sampling stops at it. */
  readonly eos: number;
  /** The id that fills left padding (masked out of attention). Never sampled unless it is `eos`. */
  readonly pad: number;
  /** Special token text → id (e.g. "<|user|>"). */
  readonly specialTokens: Readonly<Record<string, number>>;
  /** Plain text → ids. */
  encode(text: string): number[];
  /** Ids → text; special tokens are dropped unless `keepSpecial`. */
  decode(ids: readonly number[], opts?: { keepSpecial?: boolean }): string;
  /** A raw (not chat) prompt as the model reads it: BOS first where the model has one. */
  prompt(text: string): number[];
  /** A new conversation in this model's chat format, opened by `system` (none when empty). */
  conversation(system: string): Conversation;
  /** The role whose turn the token opens, where the format marks turns with one token (for displays). */
  turnRole(id: number): Role | undefined;
  toJSON(): TokenizerJSON;
}

/**
 * A conversation being laid out token by token, in the order its messages come. Every method
 * returns only the ids to append, so a caller that keeps the policy's sampled ids as they were
 * sampled (never re-tokenizing its text) builds exactly the sequence the model saw. The ids
 * returned before the first content include the conversation's opening (BOS, system prompt).
 */
export interface Conversation {
  /** A message the policy reads (system, user or tool). */
  message(role: Exclude<Role, 'assistant'>, text: string): number[];
  /** The opening of the policy's turn (its header): what the policy continues from. */
  openTurn(): number[];
  /**
   * The policy wrote `ids` in the turn just opened (ending with `eos` when it ended the turn
   * itself): the ids that must follow to close the turn, none when it closed it.
   */
  closeTurn(ids: readonly number[]): number[];
  /** An assistant turn given as text (demonstrations): its ids, the closing end of turn included. */
  writeTurn(text: string): number[];
  /** An independent copy (to try a prompt's length before committing to it). */
  clone(): Conversation;
}

/** The conversation's ids with a loss mask of 1 on the assistant turns' tokens (their end of turn included). */
export function maskedConversation(tok: Tokenizer, messages: readonly ChatMessage[]): { tokens: number[]; lossMask: number[] } {
  const system = messages[0]?.role === 'system' ? messages[0].content : '';
  const conv = tok.conversation(system);
  const tokens: number[] = [];
  const lossMask: number[] = [];
  const add = (ids: number[], trainable: boolean) => {
    tokens.push(...ids);
    lossMask.push(...ids.map(() => (trainable ? 1 : 0)));
  };
  for (const m of system ? messages.slice(1) : messages) {
    if (m.role === 'assistant') {
      add(conv.openTurn(), false);
      add(conv.writeTurn(m.content), true);
    } else add(conv.message(m.role, m.content), false);
  }
  return { tokens, lossMask };
}

/**
 * The character tokenizer's chat layout: BOS, then for each turn the role separator, the content
 * and EOS. With `generationPrompt` the assistant separator is appended so the model writes the
 * next assistant turn (which it ends with EOS).
 */
export function encodeChat(tok: CharTokenizer, messages: readonly ChatMessage[], generationPrompt = true): number[] {
  const ids = [tok.bos];
  for (const m of messages) ids.push(tok.roleToken(m.role), ...tok.encode(m.content), tok.eos);
  if (generationPrompt) ids.push(tok.roleToken('assistant'));
  return ids;
}

/** The character tokenizer's conversation (see `encodeChat`): BOS and the system message open it. */
class CharConversation implements Conversation {
  constructor(
    private readonly tok: CharTokenizer,
    private pending: number[],
  ) {}

  /** The opening (BOS, system) before the first ids returned, once. */
  private withOpening(ids: number[]): number[] {
    const out = [...this.pending, ...ids];
    this.pending = [];
    return out;
  }

  message(role: Exclude<Role, 'assistant'>, text: string): number[] {
    return this.withOpening([this.tok.roleToken(role), ...this.tok.encode(text), this.tok.eos]);
  }

  openTurn(): number[] {
    return this.withOpening([this.tok.roleToken('assistant')]);
  }

  closeTurn(ids: readonly number[]): number[] {
    return ids[ids.length - 1] === this.tok.eos ? [] : [this.tok.eos];
  }

  writeTurn(text: string): number[] {
    return [...this.tok.encode(text), this.tok.eos];
  }

  clone(): Conversation {
    return new CharConversation(this.tok, [...this.pending]);
  }
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

  /** Id of the separator that opens a turn of `role`. */
  roleToken(role: Role): number {
    const i = ROLES.indexOf(role);
    if (i < 0) throw new ConfigError('role', `unknown role "${role}"`);
    return 4 + i;
  }

  turnRole(id: number): Role | undefined {
    return id >= 4 && id < 4 + ROLES.length ? ROLES[id - 4] : undefined;
  }

  prompt(text: string): number[] {
    return [this.bos, ...this.encode(text)];
  }

  conversation(system: string): Conversation {
    return new CharConversation(this, [this.bos, ...(system ? [this.roleToken('system'), ...this.encode(system), this.eos] : [])]);
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
