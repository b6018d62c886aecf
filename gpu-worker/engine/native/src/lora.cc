// LoRA's linear layer in one call each way (lora.h). Through tfjs the same work was eight products,
// two scales and two sums per projection, each a kernel dispatch, with x, x·A, A and B copied for
// the tape: a SmolLM2-135M step has 210 such projections.
#include "lora.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "gemm.h"
#include "pool.h"
#include "vmath.h"

namespace whetstone {

namespace {

typedef float v16 __attribute__((vector_size(64)));
// Loads and stores through this type are unaligned (rows of tensors start anywhere).
typedef float v16u __attribute__((vector_size(64), aligned(4)));

// The rank-r products are skinny (r = 8 beside 576 or 1536): through the GEMM they were packed and
// padded, or bound by one accumulator's latency, at 20–40 GFLOP/s; these loops keep Q accumulators
// in registers and read the wide operand once. Each result sums its terms in a fixed order,
// whichever thread computes it.
constexpr int kQ = 8;
// Each loop below takes the rank in chunks of kQ, then one at a time, spelled out in each: a shared
// helper taking a generic lambda was tried, but the lambda is compiled for the baseline target, not
// each WHETSTONE_CLONES variant (10× slower, and it broke the LoRA test's results).

// out[i + t, q0 + q] = Σ_j u[i + t, j] · v[q0 + q, j] for t < R, q < Q: dot products of R rows
// of u with Q rows of v, each load of v serving R rows (v, 48 KiB at r = 8 and 1536 columns, is
// read from L2 once per R rows rather than once per row).
template <int R, int Q>
__attribute__((always_inline)) inline void dot_block(const float* u, const float* v, float* out, int64_t q0, int64_t r,
                                                     int64_t cols) {
  v16 acc[R][Q] = {};
  int64_t j = 0;
  for (; j + 16 <= cols; j += 16) {
    v16 x[R];
    for (int t = 0; t < R; t++) x[t] = *reinterpret_cast<const v16u*>(u + t * cols + j);
    for (int q = 0; q < Q; q++) {
      const v16 vq = *reinterpret_cast<const v16u*>(v + (q0 + q) * cols + j);
      for (int t = 0; t < R; t++) acc[t][q] += x[t] * vq;
    }
  }
  for (int t = 0; t < R; t++)
    for (int q = 0; q < Q; q++) {
      float sum = 0.f;
      for (int l = 0; l < 16; l++) sum += acc[t][q][l];
      for (int64_t k = j; k < cols; k++) sum += u[t * cols + k] * v[(q0 + q) * cols + k];
      out[t * r + q0 + q] = sum;
    }
}

template <int R>
__attribute__((always_inline)) inline void dot_rows_of(const float* u, const float* v, float* out, int64_t r,
                                                       int64_t cols) {
  int64_t q = 0;
  for (; q + kQ <= r; q += kQ) dot_block<R, kQ>(u, v, out, q, r, cols);
  for (; q < r; q++) dot_block<R, 1>(u, v, out, q, r, cols);
}

// out [n, r] = u [n, cols] · vᵀ for v [r, cols], rows [i0, i1).
WHETSTONE_CLONES void dot_rows(const float* u, const float* v, float* out, int64_t i0, int64_t i1, int64_t r,
                               int64_t cols) {
  int64_t i = i0;
  for (; i + 3 <= i1; i += 3) dot_rows_of<3>(u + i * cols, v, out + i * r, r, cols);
  for (; i < i1; i++) dot_rows_of<1>(u + i * cols, v, out + i * r, r, cols);
}

// out[q0 + q, j0 … j0+32) = Σ_i u[i, q0 + q] · v[i, j0 … j0+32) for q < Q, i in order.
template <int Q>
__attribute__((always_inline)) inline void outer_block(const float* u, const float* v, float* out, int64_t q0,
                                                       int64_t j0, int64_t n, int64_t r, int64_t cols) {
  v16 acc[Q][2] = {};
  for (int64_t i = 0; i < n; i++) {
    const v16 v0 = *reinterpret_cast<const v16u*>(v + i * cols + j0);
    const v16 v1 = *reinterpret_cast<const v16u*>(v + i * cols + j0 + 16);
    for (int q = 0; q < Q; q++) {
      const float uq = u[i * r + q0 + q];
      acc[q][0] += uq * v0;
      acc[q][1] += uq * v1;
    }
  }
  for (int q = 0; q < Q; q++) {
    *reinterpret_cast<v16u*>(out + (q0 + q) * cols + j0) = acc[q][0];
    *reinterpret_cast<v16u*>(out + (q0 + q) * cols + j0 + 16) = acc[q][1];
  }
}

// out [r, cols] = uᵀ · v for u [n, r], v [n, cols]: columns [j0, j1) (j0 a multiple of 32).
WHETSTONE_CLONES void outer_sums(const float* u, const float* v, float* out, int64_t j0, int64_t j1, int64_t n,
                                 int64_t r, int64_t cols) {
  int64_t j = j0;
  for (; j + 32 <= j1; j += 32) {
    int64_t q = 0;
    for (; q + kQ <= r; q += kQ) outer_block<kQ>(u, v, out, q, j, n, r, cols);
    for (; q < r; q++) outer_block<1>(u, v, out, q, j, n, r, cols);
  }
  for (int64_t q = 0; q < r; q++)
    for (int64_t t = j; t < j1; t++) {
      float sum = 0.f;
      for (int64_t i = 0; i < n; i++) sum += u[i * r + q] * v[i * cols + t];
      out[q * cols + t] = sum;
    }
}

// c[i, j] += Σ_{q < Q} u[i, q0 + q] · v[q0 + q, j] for all rows, 16 columns from j: those Q
// vectors of v stay in registers while the rows pass (v is read once, each row of C once per Q).
template <int Q>
__attribute__((always_inline)) inline void add_low_rank_columns(const float* u, const float* v, float* c, int64_t j,
                                                                int64_t q0, int64_t n, int64_t r, int64_t cols) {
  v16 vq[Q];
  for (int q = 0; q < Q; q++) vq[q] = *reinterpret_cast<const v16u*>(v + (q0 + q) * cols + j);
  for (int64_t i = 0; i < n; i++) {
    v16 ci = *reinterpret_cast<const v16u*>(c + i * cols + j);
    for (int q = 0; q < Q; q++) ci += u[i * r + q0 + q] * vq[q];
    *reinterpret_cast<v16u*>(c + i * cols + j) = ci;
  }
}

// c [n, cols] += u [n, r] · v [r, cols] for columns [j0, j1) (j0 a multiple of 16).
WHETSTONE_CLONES void add_low_rank_block(const float* u, const float* v, float* c, int64_t j0, int64_t j1, int64_t n,
                                         int64_t r, int64_t cols) {
  int64_t j = j0;
  for (; j + 16 <= j1; j += 16) {
    int64_t q = 0;
    for (; q + kQ <= r; q += kQ) add_low_rank_columns<kQ>(u, v, c, j, q, n, r, cols);
    for (; q < r; q++) add_low_rank_columns<1>(u, v, c, j, q, n, r, cols);
  }
  for (int64_t i = 0; i < n; i++)
    for (int64_t q = 0; q < r; q++)
      for (int64_t t = j; t < j1; t++) c[i * cols + t] += u[i * r + q] * v[q * cols + t];
}

// fn(begin, end) over [0, count) in blocks of `block`, on the pool's threads when the work
// (`work` multiply-adds) is worth waking them for (~a million), else on the caller.
template <typename Fn>
void share(int64_t count, int64_t block, int64_t work, int threads, const Fn& fn) {
  const int64_t blocks = (count + block - 1) / block;
  if (threads <= 1 || work < (1 << 20) || blocks < 2) {
    fn(0, count);
    return;
  }
  std::atomic<int64_t> next{0};
  pool().run(threads, [&](int) {
    for (int64_t b; (b = next.fetch_add(1)) < blocks;) fn(b * block, std::min(count, (b + 1) * block));
  });
}

// out [n, r] = u [n, cols] · vᵀ, v [r, cols].
void dot_products(const float* u, const float* v, float* out, int64_t n, int64_t r, int64_t cols, int threads) {
  share(n, 16, n * r * cols, threads, [&](int64_t i0, int64_t i1) { dot_rows(u, v, out, i0, i1, r, cols); });
}

// out [r, cols] = uᵀ · v, u [n, r], v [n, cols]: columns shared out, so each sum is one thread's.
void outer_products(const float* u, const float* v, float* out, int64_t n, int64_t r, int64_t cols, int threads) {
  share(cols, 128, n * r * cols, threads, [&](int64_t j0, int64_t j1) { outer_sums(u, v, out, j0, j1, n, r, cols); });
}

// c [n, cols] += u [n, r] · v [r, cols]; columns are independent.
void add_low_rank(const float* u, const float* v, float* c, int64_t n, int64_t r, int64_t cols, int threads) {
  share(cols, 128, n * r * cols, threads, [&](int64_t j0, int64_t j1) { add_low_rank_block(u, v, c, j0, j1, n, r, cols); });
}

// Aᵀ [r, in] from A [in, r] (the small factor).
void transpose_into(std::vector<float>& at, const float* a, int64_t in, int64_t r) {
  at.resize(r * in);
  for (int64_t j = 0; j < in; j++)
    for (int64_t q = 0; q < r; q++) at[q * in + j] = a[j * r + q];
}

}  // namespace

void lora_linear_forward(const float* x, const float* w, const float* bias, const float* a, const float* b, float scale,
                         float* y, float* xa, int64_t n, int64_t in, int64_t out, int64_t r, int threads) {
  thread_local std::vector<float> at, scaled;
  transpose_into(at, a, in, r);
  dot_products(x, at.data(), xa, n, r, in, threads);  // x·A
  gemm(GemmArgs{x, w, y, bias, 1, n, out, in, false, false, 0, 0, false}, threads);
  scaled.resize(n * r);
  for (int64_t i = 0; i < n * r; i++) scaled[i] = scale * xa[i];
  add_low_rank(scaled.data(), b, y, n, r, out, threads);
}

void lora_linear_backward(const float* dy, const float* x, const float* xa, const float* w, const float* a,
                          const float* b, float scale, float* dx, float* da, float* db, int64_t n, int64_t in,
                          int64_t out, int64_t r, int threads) {
  thread_local std::vector<float> g, at, dat, scaled;
  g.resize(n * r);
  dot_products(dy, b, g.data(), n, r, out, threads);  // dy·Bᵀ
  for (float& v : g) v *= scale;
  gemm(GemmArgs{dy, w, dx, nullptr, 1, n, in, out, false, true, 0, 0, false}, threads);  // dy·Wᵀ
  transpose_into(at, a, in, r);
  add_low_rank(g.data(), at.data(), dx, n, r, in, threads);  // + g·Aᵀ
  dat.resize(r * in);
  outer_products(g.data(), x, dat.data(), n, r, in, threads);  // (xᵀ·g)ᵀ
  for (int64_t j = 0; j < in; j++)
    for (int64_t q = 0; q < r; q++) da[j * r + q] = dat[q * in + j];
  scaled.resize(n * r);
  for (int64_t i = 0; i < n * r; i++) scaled[i] = scale * xa[i];
  outer_products(scaled.data(), dy, db, n, r, out, threads);  // (s·x·A)ᵀ·dy
}

}  // namespace whetstone
