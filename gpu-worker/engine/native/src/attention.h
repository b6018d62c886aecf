// Causal self-attention for training, over the fused qkv projection's layout (as the wasm SIMD
// kernels, wasm/causal-attention.wat): qkv, dqkv [B·T, 3d] (q, k, v side by side; head h of each
// at columns h·hd …); probabilities P [B·H, T, Tp] (Tp ≥ T; keys past the query are 0); y, dy [B·T, d].
#pragma once
#include <cstdint>

namespace whetstone {

struct AttentionDims {
  int64_t B, T, H, hd, Tp;
  float scale;
};

// P = softmax(scale·q kᵀ, causal) and y = P v, every channel (b, h) on the pool's threads.
void attention_forward(const float* qkv, float* P, float* y, const AttentionDims& d, int threads);
// d qkv from P, qkv and dy (every element of dqkv is written).
void attention_backward(const float* qkv, const float* P, const float* dy, float* dqkv, const AttentionDims& d,
                        int threads);

}  // namespace whetstone
