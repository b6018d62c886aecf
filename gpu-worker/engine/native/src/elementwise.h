// Elementwise kernels of the model on the pool's threads: GELU (tanh form, as x·σ(2u),
// u = c(x + a x³)) forward and backward.
#pragma once
#include <cstdint>

namespace whetstone {

// y = x·s and s = σ(2u), for n elements.
void gelu_forward(const float* x, float* y, float* s, int64_t n, int threads);
// dx = dy·(s + x·s(1 − s)·2c(1 + 3a x²)).
void gelu_backward(const float* dy, const float* x, const float* s, float* dx, int64_t n, int threads);

}  // namespace whetstone
