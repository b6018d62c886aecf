/**
 * A fine-tuned pretrained model as a Hugging Face folder that `transformers` loads and vLLM or
 * llama.cpp serve: the base's config, tokenizer, chat template and generation config, with either
 * the weights merged (adapters folded in: `model.safetensors`) or the adapters alone in PEFT's
 * layout (`adapter_model.safetensors` + `adapter_config.json`, loaded on the base by `peft`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { hasTunedWeights } from '../checkpoint';
import { type LoraConfig, loraConfigOf } from '../lora';
import { type NamedTensor, writeSafetensors } from '../safetensors';
import { type PretrainedDecoder } from './decoder';

/** What a model folder carries beside its weights, copied from the base as it is. */
const COPIED = ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja', 'generation_config.json', 'special_tokens_map.json'];

/** PEFT's names for our projection targets. */
const PEFT_MODULE: Record<string, string> = { q: 'q_proj', k: 'k_proj', v: 'v_proj', o: 'o_proj', gate: 'gate_proj', up: 'up_proj', down: 'down_proj' };

export interface ExportOptions {
  /** "merged": full weights with the adapters folded in; "peft": the adapters alone (needs adapters). */
  format: 'merged' | 'peft';
  /** The base model's folder (its config, tokenizer, template). */
  baseFolder: string;
  /** Recorded in a PEFT adapter's config as the model to load it on. */
  baseName: string;
}

/** Writes the folder; returns the files written, sorted. */
export async function exportHfFolder(model: PretrainedDecoder, outFolder: string, opts: ExportOptions): Promise<string[]> {
  await fs.promises.mkdir(outFolder, { recursive: true });
  const written: string[] = [];
  const config = JSON.parse(await fs.promises.readFile(path.join(opts.baseFolder, 'config.json'), 'utf8')) as Record<string, unknown>;
  for (const file of COPIED) {
    if (!fs.existsSync(path.join(opts.baseFolder, file))) continue;
    await fs.promises.copyFile(path.join(opts.baseFolder, file), path.join(outFolder, file));
    written.push(file);
  }
  if (opts.format === 'merged') {
    // The engine computes in f32, and so are the merged weights (a bf16 base widened exactly).
    await fs.promises.writeFile(path.join(outFolder, 'config.json'), `${JSON.stringify({ ...config, torch_dtype: 'float32', dtype: 'float32' }, null, 2)}\n`);
    await writeSafetensors(path.join(outFolder, 'model.safetensors'), await model.hfTensors(), { format: 'pt' });
    written.push('config.json', 'model.safetensors');
  } else {
    const lora = loraConfigOf(model);
    if (!lora) throw new Error('this model has no LoRA adapters to export as a PEFT adapter: export it merged');
    if (hasTunedWeights(model)) throw new Error('its LoRA adapters sit on fully fine-tuned weights, not on the imported model, which a PEFT adapter is loaded on: export it merged');
    await fs.promises.writeFile(path.join(outFolder, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
    await writeSafetensors(path.join(outFolder, 'adapter_model.safetensors'), await peftTensors(model), { format: 'pt' });
    await fs.promises.writeFile(path.join(outFolder, 'adapter_config.json'), `${JSON.stringify(peftConfig(lora, model, opts.baseName), null, 2)}\n`);
    written.push('config.json', 'adapter_model.safetensors', 'adapter_config.json');
  }
  return written.sort();
}

/**
 * The adapters under PEFT's names and layout: lora_A is [r, in] and lora_B [out, r] (torch
 * Linear weights), where the engine keeps A [in, r] and B [r, out] for its right-hand products.
 */
async function peftTensors(model: PretrainedDecoder): Promise<Map<string, NamedTensor>> {
  const out = new Map<string, NamedTensor>();
  for (const [linear, ad] of model.adapters) {
    const [fanIn, r] = ad.a.shape as [number, number];
    const fanOut = (ad.b.shape as [number, number])[1];
    out.set(`base_model.model.${linear}.lora_A.weight`, { shape: [r, fanIn], data: transpose((await ad.a.data()) as Float32Array, fanIn, r) });
    out.set(`base_model.model.${linear}.lora_B.weight`, { shape: [fanOut, r], data: transpose((await ad.b.data()) as Float32Array, r, fanOut) });
  }
  return out;
}

function peftConfig(lora: LoraConfig, model: PretrainedDecoder, baseName: string): Record<string, unknown> {
  const modules = [...new Set(model.loraLinears(lora.targets).map(({ linear }) => linear.split('.').pop()!))];
  return {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: baseName,
    r: lora.rank,
    lora_alpha: lora.alpha,
    lora_dropout: 0,
    bias: 'none',
    fan_in_fan_out: false,
    target_modules: modules.sort((a, b) => Object.values(PEFT_MODULE).indexOf(a) - Object.values(PEFT_MODULE).indexOf(b)),
    inference_mode: true,
  };
}

/** [rows, cols] row-major → [cols, rows]. */
function transpose(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = data[i * cols + j];
  return out;
}
