/**
 * A pretrained model's own tokenizer and chat template, read from its Hugging Face folder
 * (`tokenizer.json`, `tokenizer_config.json`, and `chat_template.jinja` or the config's
 * `chat_template`). Tokenization is @huggingface/tokenizers (a pure-JS port of the Rust crate the
 * model was made with) and rendering is @huggingface/jinja (the Jinja subset chat templates use):
 * writing either by hand would drift from what the model saw in training, which the fixtures from
 * transformers pin down (fixtures/tokenizer-chatml/expected.json).
 *
 * As the engine's `Tokenizer`, its conversations are the chat template's: each piece of the
 * conversation is the difference between the template's renderings before and after it, so any
 * template works that renders a conversation's start as the start of the whole (the rest are
 * refused with that reason rather than trained on misaligned masks).
 */
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer as HfTokenizerCore } from '@huggingface/tokenizers';
import { ConfigError } from '../errors';
import { type Conversation, type Role, type Tokenizer, type TokenizerJSON } from '../tokenizer';

export interface ChatTurn {
  role: string;
  content: string;
}

export class HfTokenizer implements Tokenizer {
  readonly kind = 'hf';
  readonly vocabSize: number;
  readonly bos: number;
  readonly eos: number;
  readonly pad: number;
  readonly specialTokens: Readonly<Record<string, number>>;
  /** The special tokens' texts, where a piece of a rendering may end a turn. */
  readonly specialTexts: readonly string[];

  private constructor(
    private readonly core: HfTokenizerCore,
    private readonly template: Template | null,
    private readonly config: Record<string, unknown>,
    /** What `toJSON` names as the tokenizer's source (the model's content hash, or its folder). */
    private readonly source: string,
  ) {
    // A loop, not Math.max(...ids): spreading Qwen's 151,665 ids overflows the call stack.
    let top = -1;
    for (const id of core.get_vocab(true).values()) if (id > top) top = id;
    this.vocabSize = top + 1;
    const specials = [...core.get_added_tokens_decoder().values()].filter((t) => t.special);
    this.specialTokens = Object.fromEntries(specials.map((t) => [t.content, core.token_to_id(t.content)!]));
    this.specialTexts = specials.map((t) => t.content);
    const idOf = (key: string) => {
      const text = this.specialText(key);
      return text === undefined ? undefined : core.token_to_id(text);
    };
    this.bos = idOf('bos_token') ?? -1;
    // The end of the policy's turn: the template's (ChatML's <|im_end|>, Llama 3's <|eot_id|>)
    // where there is one, whatever eos_token says (a base model's <|endoftext|>), else eos_token.
    const eos = template ? this.turnEnd() : idOf('eos_token');
    if (eos === undefined) throw new ConfigError('tokenizer_config.json', 'names no eos_token and the model has no chat template, so a generation could never end');
    this.eos = eos;
    this.pad = idOf('pad_token') ?? eos;
  }

  /** Reads a model folder's tokenizer; a file that is missing or unreadable is refused by name. */
  static fromFolder(folder: string, source = folder): HfTokenizer {
    const json = (file: string): Record<string, unknown> => {
      const path = join(folder, file);
      if (!existsSync(path)) throw new ConfigError(file, `missing from ${folder}`);
      try {
        return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
      } catch (e) {
        throw new ConfigError(file, `not JSON (${(e as Error).message})`);
      }
    };
    const tokenizer = json('tokenizer.json');
    const config = json('tokenizer_config.json');
    const templateFile = join(folder, 'chat_template.jinja');
    const source_ = existsSync(templateFile) ? readFileSync(templateFile, 'utf8') : typeof config.chat_template === 'string' ? config.chat_template : null;
    let core: HfTokenizerCore;
    try {
      core = new HfTokenizerCore(tokenizer, config);
    } catch (e) {
      throw new ConfigError('tokenizer.json', `the tokenizer cannot be read (${(e as Error).message})`);
    }
    let template: Template | null;
    try {
      template = source_ === null ? null : new Template(source_);
    } catch (e) {
      throw new ConfigError('chat template', `it does not parse (${(e as Error).message})`);
    }
    return new HfTokenizer(core, template, config, source);
  }

  /** Text → ids, special-token text in it read as those tokens (as transformers does), no BOS added. */
  encode(text: string): number[] {
    return this.core.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: readonly number[], opts: { keepSpecial?: boolean } = {}): string {
    // (The library refuses an empty list; transformers decodes it to "".)
    return ids.length === 0 ? '' : this.core.decode([...ids], { skip_special_tokens: !opts.keepSpecial });
  }

  prompt(text: string): number[] {
    // The tokenizer's own post-processor adds BOS where the model has one (Llama), none for Qwen.
    return this.core.encode(text, { add_special_tokens: true }).ids;
  }

  conversation(system: string): Conversation {
    if (!this.template) return this.noTemplate();
    return new TemplateConversation(this, system ? [{ role: 'system', content: system }] : [], '');
  }

  turnRole(): Role | undefined {
    // Chat templates mark a turn with text after a special token, not with one token per role.
    return undefined;
  }

  toJSON(): TokenizerJSON {
    return { kind: 'hf', source: this.source };
  }

  get hasChatTemplate(): boolean {
    return this.template !== null;
  }

  /** The conversation as the model's chat template writes it; `generationPrompt` opens the assistant's turn. */
  renderChat(messages: readonly ChatTurn[], generationPrompt = true): string {
    if (!this.template) this.noTemplate();
    try {
      return this.template!.render({ messages, add_generation_prompt: generationPrompt, bos_token: this.specialText('bos_token'), eos_token: this.specialText('eos_token') });
    } catch (e) {
      throw new ConfigError('chat template', `it fails to render (${(e as Error).message})`);
    }
  }

  /** The rendered conversation as ids. */
  encodeChat(messages: readonly ChatTurn[], generationPrompt = true): number[] {
    return this.encode(this.renderChat(messages, generationPrompt));
  }

  /**
   * The conversation's ids with a loss mask: 1 exactly on what the policy wrote — each assistant
   * turn's content and the end-of-turn token that closed it — and 0 on the template's headers, the
   * other roles' messages and whatever the template puts after an end of turn (a newline). The
   * pieces are cut at the template's special tokens, where the tokenizer cuts too, so their ids
   * joined are the whole's ids (the tests check both against transformers).
   */
  maskedChat(messages: readonly ChatTurn[], generationPrompt = false): { ids: number[]; mask: number[] } {
    const conv = new TemplateConversation(this, [], '');
    const ids: number[] = [];
    const mask: number[] = [];
    const push = (piece: number[], trainable: 0 | 1) => {
      ids.push(...piece);
      mask.push(...piece.map(() => trainable));
    };
    for (const m of messages) {
      if (m.role === 'assistant') {
        push(conv.openTurn(), 0);
        push(conv.writeTurn(m.content), 1);
      } else push(conv.message(m.role as Exclude<Role, 'assistant'>, m.content), 0);
    }
    push(this.encode(conv.rest(generationPrompt)), 0);
    return { ids, mask };
  }

  /** A special token's text from tokenizer_config.json (a string, or an object with its content). */
  private specialText(key: string): string | undefined {
    const v = this.config[key];
    if (typeof v === 'string') return v;
    return v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string' ? (v as { content: string }).content : undefined;
  }

  /**
   * The id of the special token the template closes an assistant's turn with. Probed over two
   * turns, so that a template which renders earlier turns differently once a later one follows
   * (Qwen3's thinking blocks) is refused when the model is read, not at a run's second turn.
   */
  private turnEnd(): number {
    const probe = new TemplateConversation(this, [], '');
    probe.message('user', 'x');
    probe.openTurn();
    const turn = probe.writtenTurn('y');
    probe.message('user', 'z');
    probe.openTurn();
    probe.writtenTurn('w');
    const end = this.specialTexts.find((t) => turn.endsWith(t))!;
    return this.core.token_to_id(end)!;
  }

  private noTemplate(): never {
    throw new ConfigError('chat template', "this model has none (neither chat_template.jinja nor tokenizer_config.json's chat_template)");
  }
}

/** A conversation in a model's chat template (see the file comment). */
class TemplateConversation implements Conversation {
  constructor(
    private readonly tok: HfTokenizer,
    private readonly messages: ChatTurn[],
    /** The template's rendering of what has been laid out so far. */
    private rendered: string,
  ) {}

  message(role: Exclude<Role, 'assistant'>, text: string): number[] {
    this.messages.push({ role, content: text });
    return this.tok.encode(this.advance(false, `message ${this.messages.length}`));
  }

  openTurn(): number[] {
    return this.tok.encode(this.advance(true, `message ${this.messages.length + 1}'s header`));
  }

  closeTurn(ids: readonly number[]): number[] {
    this.writtenTurn(this.tok.decode(ids));
    return ids[ids.length - 1] === this.tok.eos ? [] : [this.tok.eos];
  }

  writeTurn(text: string): number[] {
    return this.tok.encode(this.writtenTurn(text));
  }

  clone(): Conversation {
    return new TemplateConversation(this.tok, [...this.messages], this.rendered);
  }

  /** What the template adds after everything laid out (a newline after an end of turn; the generation prompt). */
  rest(generationPrompt: boolean): string {
    return this.advance(generationPrompt, 'its end');
  }

  /**
   * The assistant's turn with `text` as the template writes it: its content and the end-of-turn
   * token that closes it (what the policy writes), leaving what follows that token to the next piece.
   */
  writtenTurn(text: string): string {
    this.messages.push({ role: 'assistant', content: text });
    const n = this.messages.length;
    const full = this.renderChecked(false, `message ${n}`);
    const turn = full.slice(this.rendered.length);
    // (The content as the template wrote it: some templates trim it.)
    const content = text.trim();
    const at = content === '' ? 0 : turn.indexOf(content);
    const from = at < 0 ? 0 : at + content.length;
    const ends = this.tok.specialTexts.map((t) => ({ t, i: turn.indexOf(t, from) })).filter((e) => e.i >= 0);
    if (ends.length === 0) throw new ConfigError('chat template', `message ${n} (the assistant's) is not closed by a special token after its content, so what the policy wrote cannot be told from what follows`);
    const end = ends.reduce((a, b) => (b.i < a.i ? b : a));
    const written = turn.slice(0, end.i + end.t.length);
    this.rendered += written;
    return written;
  }

  /** The new part of the rendering, which becomes the rendering so far. */
  private advance(generationPrompt: boolean, what: string): string {
    const full = this.renderChecked(generationPrompt, what);
    const piece = full.slice(this.rendered.length);
    this.rendered = full;
    return piece;
  }

  private renderChecked(generationPrompt: boolean, what: string): string {
    const full = this.tok.renderChat(this.messages, generationPrompt);
    if (!full.startsWith(this.rendered)) {
      throw new ConfigError('chat template', `it renders the conversation up to ${what} other than as the start of the whole conversation, so the policy's turns cannot be told apart`);
    }
    return full;
  }
}
