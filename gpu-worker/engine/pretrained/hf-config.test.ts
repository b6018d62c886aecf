/** config.json → DecoderConfig: both transformers formats, and refusals naming the option. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors';
import { parseDecoderConfig } from './hf-config';

const FIXTURES = path.join(__dirname, 'fixtures');
const configOf = (name: string) => JSON.parse(fs.readFileSync(path.join(FIXTURES, name, 'config.json'), 'utf8')) as Record<string, unknown>;

describe('parseDecoderConfig', () => {
  it('reads each family', () => {
    expect(parseDecoderConfig(configOf('llama-tied'))).toMatchObject({ family: 'llama', tiedEmbeddings: true, qkvBias: false, qkNorm: false, heads: 4, kvHeads: 2, headDim: 16, ropeTheta: 10000, ropeScaling: null });
    expect(parseDecoderConfig(configOf('qwen2'))).toMatchObject({ family: 'qwen2', qkvBias: true, oBias: false, qkNorm: false });
    expect(parseDecoderConfig(configOf('qwen3'))).toMatchObject({ family: 'qwen3', qkvBias: false, qkNorm: true, headDim: 24, tiedEmbeddings: false });
  });

  it('reads rope settings as transformers 4 writes them (rope_theta, rope_scaling) and as 5 does (rope_parameters)', () => {
    const v5 = configOf('llama3-untied');
    const { rope_parameters: rope, ...rest } = v5 as { rope_parameters: Record<string, unknown> };
    const { rope_theta: theta, ...scaling } = rope;
    const v4 = { ...rest, rope_theta: theta, rope_scaling: scaling };
    const want = { ropeTheta: 500000, ropeScaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 32 } };
    expect(parseDecoderConfig(v5)).toMatchObject(want);
    expect(parseDecoderConfig(v4)).toEqual(parseDecoderConfig(v5));
    // Older checkpoints spell the rope type as "type".
    expect(parseDecoderConfig({ ...rest, rope_theta: theta, rope_scaling: { ...scaling, rope_type: undefined, type: 'llama3' } })).toEqual(parseDecoderConfig(v5));
  });

  it('refuses an unsupported model_type or option, naming it', () => {
    const base = configOf('llama-tied');
    const refused = (patch: Record<string, unknown>, field: RegExp, why: RegExp) => {
      const run = () => parseDecoderConfig({ ...base, ...patch });
      expect(run).toThrow(ConfigError);
      expect(run).toThrow(field);
      expect(run).toThrow(why);
    };
    refused({ model_type: 'gemma2' }, /config\.json\.model_type/, /"gemma2" is not supported \(supported: llama, qwen2, qwen3\)/);
    refused({ rope_parameters: { rope_type: 'yarn', rope_theta: 10000, factor: 4 } }, /config\.json\.rope_parameters\.rope_type/, /"yarn" is not supported/);
    refused({ rope_parameters: { rope_type: 'llama3', rope_theta: 10000, factor: 8 } }, /config\.json\.rope_parameters\.low_freq_factor/, /required/);
    refused({ hidden_act: 'gelu' }, /config\.json\.hidden_act/, /"gelu" is not supported/);
    refused({ mlp_bias: true }, /config\.json\.mlp_bias/, /not supported/);
    refused({ use_sliding_window: true }, /config\.json\.use_sliding_window/, /not supported/);
    refused({ layer_types: ['full_attention', 'sliding_attention'] }, /config\.json\.layer_types\.1/, /"sliding_attention" is not supported/);
    refused({ num_key_value_heads: 3 }, /config\.json\.num_key_value_heads/, /does not divide/);
    refused({ hidden_size: 'wide' }, /config\.json\.hidden_size/, /number/);
  });
});
