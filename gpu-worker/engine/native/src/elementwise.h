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

// RMSNorm of each row of x [n, d] (the Llama and Qwen decoders): y = x · rstd · gain with
// rstd = 1/√(mean x² + ε), and rstd [n] for the backward.
void rms_norm_forward(const float* x, const float* gain, float* y, float* rstd, int64_t n, int64_t d, float eps,
                      int threads);
// dx = rstd · (dy·gain − x̂ · mean(dy·gain·x̂)), x̂ = x · rstd, and the gain's gradient Σ_rows dy·x̂ (in a
// fixed order whatever the thread count).
void rms_norm_backward(const float* dy, const float* x, const float* rstd, const float* gain, float* dx, float* dgain,
                       int64_t n, int64_t d, int threads);

// SwiGLU's product: z = silu(gate) · up, silu(g) = g·σ(g).
void swiglu_forward(const float* gate, const float* up, float* z, int64_t n, int threads);
// dgate = dz · up · σ(g)(1 + g(1 − σ(g))), dup = dz · silu(g).
void swiglu_backward(const float* dz, const float* gate, const float* up, float* dgate, float* dup, int64_t n,
                     int threads);

// out[j] = Σ_i x[i, j] over the rows of x [n, m], in row order (a bias's gradient; the same bits
// as the one-row product of a ones vector that it replaces).
void column_sums(const float* x, float* out, int64_t n, int64_t m);

}  // namespace whetstone
