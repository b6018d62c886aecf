// Elementwise and row-wise kernels of the model on the pool's threads: GELU (tanh form, as
// x·σ(2u), u = c(x + a x³)) and layer norm, forward and backward.
#pragma once
#include <cstdint>

namespace whetstone {

// y = x·s and s = σ(2u), for n elements.
void gelu_forward(const float* x, float* y, float* s, int64_t n, int threads);
// dx = dy·(s + x·s(1 − s)·2c(1 + 3a x²)).
void gelu_backward(const float* dy, const float* x, const float* s, float* dx, int64_t n, int threads);

// Layer norm of each row of x [n, d]: y, and stats [n, 2] (mean, 1/σ) for the backward.
void layer_norm_forward(const float* x, const float* gain, const float* bias, float* y, float* stats, int64_t n,
                        int64_t d, float eps, int threads);
// dx, and the gain's and bias's gradients summed over the rows (in a fixed order: the same bits on
// any number of threads).
void layer_norm_backward(const float* dy, const float* x, const float* stats, const float* gain, float* dx,
                         float* dgain, float* dbias, int64_t n, int64_t d, int threads);

}  // namespace whetstone
