// One decoding step of the engine's GPT (gpu-worker/engine/model.ts) for B rows, whole, in one
// call: token and position embedding, every layer (layer norm, qkv, attention over the KV cache
// with the new key and value written in place, projection, layer norm, GELU MLP, residuals), the
// final layer norm and the head. The sampler calls it once per generated token instead of ~55 tfjs
// kernels. Same math and layouts as the tfjs path (cache [capacity, B, H, hd], time-major).
#pragma once
#include <cstdint>
#include <vector>

namespace whetstone {

struct DecodeLayer {
  const float *ln1_g, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b, *ln2_g, *ln2_b, *fc_w, *fc_b, *out_w, *out_b;
  float *keys, *values;  // [capacity, B, H, hd]; position `past` is written
};

struct DecodeArgs {
  int64_t B, d, H, V, hid, past;
  const int32_t* tokens;     // [B]
  const int32_t* positions;  // [B]
  const float* key_mask;     // [B, past + 1]: 0 masks a key (left padding)
  const float *wte, *wpe, *lnf_g, *lnf_b, *head;  // head [d, V]
  std::vector<DecodeLayer> layers;
  float* logits;  // [B, V]
  float eps;
};

void decode_step(const DecodeArgs& a);

}  // namespace whetstone
