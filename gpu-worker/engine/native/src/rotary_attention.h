// Causal grouped-query attention with rotary positions for training the pretrained decoders
// (Llama, Qwen): separate q [B·T, H·hd], k and v [B·T, Hkv·hd] as their projections lay them out,
// rotated inside the kernel ("rotate half": dimension c pairs with c + hd/2) by cos and sin tables
// [R, T, hd/2] (R = 1, shared by every sequence, or B). Query head h reads key/value head
// h / (H / Hkv), as transformers' repeat_kv. P [B·H, T, Tp] (keys past the query are 0), y [B·T, H·hd].
#pragma once
#include <cstdint>

namespace whetstone {

struct RotaryAttentionDims {
  int64_t B, T, H, Hkv, hd, Tp, R;
  float scale;
};

// P = softmax(scale·rot(q) rot(k)ᵀ, causal), y = P v.
void rotary_attention_forward(const float* q, const float* k, const float* v, const float* cos, const float* sin,
                              float* P, float* y, const RotaryAttentionDims& d, int threads);
// dq, dk, dv (before the rotation, as the projections produced q and k) from P and dy; every
// element is written. A key/value head's gradient sums its query heads in head order.
void rotary_attention_backward(const float* q, const float* k, const float* v, const float* cos, const float* sin,
                               const float* P, const float* dy, float* dq, float* dk, float* dv,
                               const RotaryAttentionDims& d, int threads);

}  // namespace whetstone
