/**
 * A pretrained model's own tokenizer and chat template, read from its Hugging Face folder
 * (`tokenizer.json`, `tokenizer_config.json`, and `chat_template.jinja` or the config's
 * `chat_template`). Tokenization is @huggingface/tokenizers (a pure-JS port of the Rust crate the
 * model was made with) and rendering is @huggingface/jinja (the Jinja subset chat templates use):
 * writing either by hand would drift from what the model saw in training, which the fixtures from
 * transformers pin down (fixtures/tokenizer-chatml/expected.json).
 */
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer as HfTokenizerCore } from '@huggingface/tokenizers';
import { ConfigError } from '../errors';

export interface ChatTurn {
  role: string;
  content: string;
}

export class HfTokenizer {
  private constructor(
    private readonly core: HfTokenizerCore,
    private readonly template: Template | null,
    private readonly config: Record<string, unknown>,
  ) {}

  /** Reads a model folder's tokenizer; a file that is missing or unreadable is refused by name. */
  static fromFolder(folder: string): HfTokenizer {
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
    const source = existsSync(templateFile) ? readFileSync(templateFile, 'utf8') : typeof config.chat_template === 'string' ? config.chat_template : null;
    let core: HfTokenizerCore;
    try {
      core = new HfTokenizerCore(tokenizer, config);
    } catch (e) {
      throw new ConfigError('tokenizer.json', `the tokenizer cannot be read (${(e as Error).message})`);
    }
    let template: Template | null;
    try {
      template = source === null ? null : new Template(source);
    } catch (e) {
      throw new ConfigError('chat template', `it does not parse (${(e as Error).message})`);
    }
    return new HfTokenizer(core, template, config);
  }

  /** Text → ids, special-token text in it read as those tokens (as transformers does), no BOS added. */
  encode(text: string): number[] {
    return this.core.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: readonly number[], opts: { keepSpecial?: boolean } = {}): string {
    // (The library refuses an empty list; transformers decodes it to "".)
    return ids.length === 0 ? '' : this.core.decode([...ids], { skip_special_tokens: !opts.keepSpecial });
  }

  get hasChatTemplate(): boolean {
    return this.template !== null;
  }

  /** The conversation as the model's chat template writes it; `generationPrompt` opens the assistant's turn. */
  renderChat(messages: readonly ChatTurn[], generationPrompt = true): string {
    if (!this.template) throw new ConfigError('chat template', 'this model has none (neither chat_template.jinja nor tokenizer_config.json\'s chat_template)');
    try {
      return this.template.render({ messages, add_generation_prompt: generationPrompt, bos_token: this.specialText('bos_token'), eos_token: this.specialText('eos_token') });
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
   * other roles' messages and whatever the template puts after an end of turn (a newline). Each
   * turn's span is the difference between renderings of the conversation up to it, so any
   * template works that renders a conversation's start as the start of the whole; the pieces are
   * cut at the template's special tokens, where the tokenizer cuts too, so their ids joined are
   * the whole's ids (the tests check both against transformers).
   */
  maskedChat(messages: readonly ChatTurn[], generationPrompt = false): { ids: number[]; mask: number[] } {
    // The template's special tokens: the first after a turn's content is its end of turn (ChatML's
    // <|im_end|> where eos_token is <|endoftext|>, Llama 3's <|eot_id|>), whatever eos_token says.
    const specials = [...this.core.get_added_tokens_decoder().values()].filter((t) => t.special).map((t) => t.content);
    const ids: number[] = [];
    const mask: number[] = [];
    const push = (text: string, trainable: 0 | 1) => {
      for (const id of this.encode(text)) {
        ids.push(id);
        mask.push(trainable);
      }
    };
    const full = this.renderChat(messages, generationPrompt);
    let done = '';
    const after = (rendered: string, what: string): string => {
      if (!rendered.startsWith(done) || !full.startsWith(rendered)) {
        throw new ConfigError('chat template', `it renders the conversation up to ${what} other than as the start of the whole conversation, so the policy's turns cannot be told apart`);
      }
      const piece = rendered.slice(done.length);
      done = rendered;
      return piece;
    };
    messages.forEach((m, i) => {
      if (m.role !== 'assistant') return;
      push(after(this.renderChat(messages.slice(0, i), true), `message ${i + 1}'s header`), 0);
      const turn = after(this.renderChat(messages.slice(0, i + 1), false), `message ${i + 1}`);
      // The policy wrote its content and ended the turn: up to the end-of-turn token, included.
      // (The content as the template wrote it: some templates trim it.)
      const content = m.content.trim();
      const at = content === '' ? 0 : turn.indexOf(content);
      const from = at < 0 ? 0 : at + content.length;
      const ends = specials.map((t) => ({ t, i: turn.indexOf(t, from) })).filter((e) => e.i >= 0);
      if (ends.length === 0) throw new ConfigError('chat template', `message ${i + 1} (the assistant's) is not closed by a special token after its content, so what the policy wrote cannot be told from what follows`);
      const end = ends.reduce((a, b) => (b.i < a.i ? b : a));
      const written = end.i + end.t.length;
      push(turn.slice(0, written), 1);
      push(turn.slice(written), 0);
    });
    push(full.slice(done.length), 0);
    return { ids, mask };
  }

  /** A special token's text from tokenizer_config.json (a string, or an object with its content). */
  private specialText(key: string): string | undefined {
    const v = this.config[key];
    if (typeof v === 'string') return v;
    return v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string' ? (v as { content: string }).content : undefined;
  }
}
