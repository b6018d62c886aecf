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
    const token = (key: string) => {
      const v = this.config[key];
      return typeof v === 'string' ? v : v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string' ? (v as { content: string }).content : undefined;
    };
    try {
      return this.template.render({ messages, add_generation_prompt: generationPrompt, bos_token: token('bos_token'), eos_token: token('eos_token') });
    } catch (e) {
      throw new ConfigError('chat template', `it fails to render (${(e as Error).message})`);
    }
  }

  /** The rendered conversation as ids. */
  encodeChat(messages: readonly ChatTurn[], generationPrompt = true): number[] {
    return this.encode(this.renderChat(messages, generationPrompt));
  }
}
