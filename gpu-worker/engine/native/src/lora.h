// A frozen linear layer with a low-rank adapter (LoRA), forward and backward, each as one call:
// the products on the native GEMM, the rank-r corrections as row updates, no copies between them.
#pragma once
#include <cstdint>

namespace whetstone {

// y = x·W (+ bias) + s·(x·A)·B for x [n, in], W [in, out], A [in, r], B [r, out]; also x·A [n, r],
// which the backward needs.
void lora_linear_forward(const float* x, const float* w, const float* bias, const float* a, const float* b, float scale,
                         float* y, float* xa, int64_t n, int64_t in, int64_t out, int64_t r, int threads);

// With g = s·dy·Bᵀ [n, r]: dx = dy·Wᵀ + g·Aᵀ, dA = xᵀ·g, dB = (s·x·A)ᵀ·dy. W and its bias are frozen
// (no gradient).
void lora_linear_backward(const float* dy, const float* x, const float* xa, const float* w, const float* a,
                          const float* b, float scale, float* dx, float* da, float* db, int64_t n, int64_t in,
                          int64_t out, int64_t r, int threads);

}  // namespace whetstone
