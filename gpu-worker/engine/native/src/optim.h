// The optimiser's passes over every parameter at once: Adam(W) in place and the gradients' global
// sum of squares (for clipping), on the pool's threads, with results independent of the thread count.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace whetstone {

// The step's hyperparameters as JavaScript numbers (doubles).
struct AdamHyper {
  double scale, lr, beta1, beta2, bc1, bc2, eps;
};

// One tensor of Adam's: parameter, gradient and moments (n floats each), and its decoupled weight
// decay (lr · weightDecay, or 0).
struct AdamTensor {
  float* p;
  const float* g;
  float* m;
  float* v;
  int64_t n;
  double decay;
};

// g ← scale·g; m ← β1 m + (1−β1) g; v ← β2 v + (1−β2) g²; p ← p − lr (m/bc1)/(√(v/bc2) + ε) − decay·p,
// in place, element by element, with the wasm path's arithmetic to the bit (optim.cc says how).
void adam_step(const std::vector<AdamTensor>& tensors, const AdamHyper& h, int threads);

// Σ x² over every array, in double precision: fixed blocks summed in a fixed order, so the same
// bits on any number of threads.
double sum_squares(const std::vector<std::pair<const float*, int64_t>>& arrays, int threads);

}  // namespace whetstone
