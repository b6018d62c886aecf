// The log-probability of each row's target under logits [n, V] (log-softmax at one column), the
// trainers' loss input, and its gradient, with the log-sum-exp of each row kept between the two.
#pragma once
#include <cstdint>

namespace whetstone {

// logp[r] = x[r, t_r] − lse[r], lse[r] = log Σ_j e^{x[r, j]}.
void target_logprob_forward(const float* x, const int32_t* targets, float* logp, float* lse, int64_t n, int64_t V,
                            int threads);
// dx[r, j] = g[r] · (1[j = t_r] − e^{x[r, j] − lse[r]}).
void target_logprob_backward(const float* g, const float* x, const float* lse, const int32_t* targets, float* dx,
                             int64_t n, int64_t V, int threads);

}  // namespace whetstone
