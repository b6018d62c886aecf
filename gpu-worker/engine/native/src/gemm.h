// Single-precision matrix products for the engine: C = op(A)·op(B) (+ bias) (then ReLU), row-major,
// in batches, over memory the caller owns (the wasm backend's heap).
#pragma once
#include <cstdint>

namespace whetstone {

struct GemmArgs {
  const float* a;
  const float* b;
  float* c;
  const float* bias;  // [n], added to every row; may be null
  int64_t batch, m, n, k;
  bool trans_a, trans_b;
  // Elements between one batch item's matrix and the next; 0 broadcasts one matrix to every item.
  int64_t a_stride, b_stride;
  bool relu;
};

// The microkernel chosen for this CPU: "avx512", "avx2" or "portable"; select_gemm_kernel picks one
// the CPU can run (tests and comparisons run the lower ones too).
const char* gemm_kernel_name();
bool select_gemm_kernel(const char* name);
// On up to `threads` threads, fewer for small products (waking threads would cost more).
void gemm(const GemmArgs& args, int threads);

}  // namespace whetstone
