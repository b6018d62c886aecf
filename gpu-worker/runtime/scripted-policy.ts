/**
 * A policy that answers with text computed from the prompt: for tests, benchmarks and the dry run
 * of the rollout runtime. It obeys the same rules as the sampler: maxTokens, stop strings (kept in
 * the output) and EOS at the end of an answer that fits.
 */
import { type GenerateOptions, type Policy, type SampleResult, type Tokenizer } from './policy';

export interface ScriptedCall {
  prompts: number[][];
  options: GenerateOptions;
}

export class ScriptedPolicy implements Policy {
  readonly calls: ScriptedCall[] = [];

  constructor(
    private readonly tokenizer: Tokenizer,
    /** Gets the prompt as text with special tokens spelled out, and the call's seed and row. */
    private readonly respond: (promptText: string, index: number, seed: number) => string,
  ) {}

  async generate(prompts: number[][], options: GenerateOptions): Promise<SampleResult[]> {
    this.calls.push({ prompts, options });
    return prompts.map((prompt, i) => {
      let text = this.respond(this.tokenizer.decode(prompt, { keepSpecial: true }), i, options.seed);
      let finishReason: SampleResult['finishReason'] = 'eos';
      let stopped: string | undefined;
      for (const stop of options.stop) {
        const at = text.indexOf(stop);
        if (at >= 0) {
          text = text.slice(0, at + stop.length);
          finishReason = 'stop';
          stopped = stop;
        }
      }
      let tokens = this.tokenizer.encode(text);
      if (finishReason === 'eos') tokens.push(this.tokenizer.eos);
      if (tokens.length > options.maxTokens) {
        tokens = tokens.slice(0, options.maxTokens);
        finishReason = 'length';
        stopped = undefined;
      }
      return {
        tokens,
        text: this.tokenizer.decode(tokens),
        logprobs: tokens.map(() => -0.5),
        finishReason,
        ...(stopped ? { stop: stopped } : {}),
      };
    });
  }
}
