// Blocks of a fixed size go to the threads from a shared counter; each element is computed alone,
// so the result does not depend on the thread count.
#include "elementwise.h"

#include <atomic>
#include <cmath>
#include <vector>

#include "pool.h"
#include "vec16.h"
#include "vmath.h"

namespace whetstone {

namespace {

constexpr float kC = 0.7978845608028654f;  // √(2/π)
constexpr float kA = 0.044715f;
// Elements per work item: large enough that a block's work outweighs taking it (~10 µs).
constexpr int64_t kBlock = 1 << 14;

// s = 1 / (1 + e^{−2u}), y = x·s, in three passes over pieces small enough to stay in L1 (over a
// whole 64 KB block each pass went to L2 and back: measured 25% slower).
WHETSTONE_CLONES void gelu_forward_block(const float* x, float* y, float* s, int64_t n) {
  constexpr int64_t kPiece = 512;
  for (int64_t at = 0; at < n; at += kPiece) {
    const int64_t len = std::min(kPiece, n - at);
    const float* xp = x + at;
    float* sp = s + at;
    float* yp = y + at;
    for (int64_t i = 0; i < len; i++) sp[i] = -2.f * kC * (xp[i] + kA * xp[i] * xp[i] * xp[i]);
    exp_in_place(sp, len);
    for (int64_t i = 0; i < len; i++) {
      sp[i] = 1.f / (1.f + sp[i]);
      yp[i] = xp[i] * sp[i];
    }
  }
}

WHETSTONE_CLONES void gelu_backward_block(const float* dy, const float* x, const float* s, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    const float du = 2.f * kC * (1.f + 3.f * kA * x[i] * x[i]);
    dx[i] = dy[i] * (s[i] + x[i] * s[i] * (1.f - s[i]) * du);
  }
}

template <typename F>
void blocks(int64_t n, int threads, F f) {
  if (n < 2 * kBlock) threads = 1;
  const int64_t count = (n + kBlock - 1) / kBlock;
  std::atomic<int64_t> next{0};
  pool().run(threads, [&](int) {
    for (int64_t b; (b = next.fetch_add(1)) < count;) f(b * kBlock, std::min(kBlock, n - b * kBlock));
  });
}

// Rows per work item of the layer norms (and the unit of the backward's partial column sums).
constexpr int64_t kRowBlock = 32;

WHETSTONE_CLONES void layer_norm_rows(const float* x, const float* g, const float* b, float* y, float* stats,
                                      int64_t r0, int64_t r1, int64_t d, float eps) {
  const int64_t dv = d / L * L;  // columns in whole vectors; the rest one by one
  for (int64_t r = r0; r < r1; r++) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    // Two passes (mean, then the spread about it): as accurate as the one-pass double sum of the
    // JavaScript kernel without its cost. Sums in 16 lanes: a scalar sum is one chain of dependent
    // adds (it was most of the kernel's time).
    v16 acc = {};
    for (int64_t j = 0; j < dv; j += L) acc += load(xr + j);
    float sum = sum_lanes(acc);
    for (int64_t j = dv; j < d; j++) sum += xr[j];
    const float mean = sum / static_cast<float>(d);
    acc = v16{};
    for (int64_t j = 0; j < dv; j += L) {
      const v16 c = load(xr + j) - mean;
      acc += c * c;
    }
    float sq = sum_lanes(acc);
    for (int64_t j = dv; j < d; j++) sq += (xr[j] - mean) * (xr[j] - mean);
    const float rstd = 1.f / std::sqrt(sq / static_cast<float>(d) + eps);
    for (int64_t j = 0; j < d; j++) yr[j] = (xr[j] - mean) * rstd * g[j] + b[j];
    stats[2 * r] = mean;
    stats[2 * r + 1] = rstd;
  }
}

// Rows [r0, r1): dx, and this block's column sums into partial [2][d] (d gain, then d bias).
WHETSTONE_CLONES void layer_norm_backward_rows(const float* dy, const float* x, const float* stats, const float* g,
                                               float* dx, float* partial, int64_t r0, int64_t r1, int64_t d) {
  float* pg = partial;
  float* pb = partial + d;
  for (int64_t j = 0; j < d; j++) pg[j] = pb[j] = 0.f;
  for (int64_t r = r0; r < r1; r++) {
    const float* dyr = dy + r * d;
    const float* xr = x + r * d;
    const float mean = stats[2 * r], rstd = stats[2 * r + 1];
    // Row sums in 16 lanes (see layer_norm_rows); the column sums are elementwise.
    v16 vsg = {}, vsgx = {};
    int64_t j = 0;
    for (; j + L <= d; j += L) {
      const v16 dyv = load(dyr + j), xhat = (load(xr + j) - mean) * rstd;
      const v16 gj = dyv * load(g + j);
      vsg += gj;
      vsgx += gj * xhat;
      store(pg + j, load(pg + j) + dyv * xhat);
      store(pb + j, load(pb + j) + dyv);
    }
    float sg = sum_lanes(vsg), sgx = sum_lanes(vsgx);
    for (; j < d; j++) {
      const float xhat = (xr[j] - mean) * rstd;
      const float gj = dyr[j] * g[j];
      sg += gj;
      sgx += gj * xhat;
      pg[j] += dyr[j] * xhat;
      pb[j] += dyr[j];
    }
    const float shift = -sg / static_cast<float>(d) * rstd;
    const float slope = sgx / static_cast<float>(d) * rstd;
    float* dxr = dx + r * d;
    for (int64_t j = 0; j < d; j++) dxr[j] = dyr[j] * g[j] * rstd + shift - (xr[j] - mean) * rstd * slope;
  }
}

template <typename F>
void row_blocks(int64_t n, int64_t d, int threads, F f) {
  if (n * d < 2 * kBlock) threads = 1;
  const int64_t count = (n + kRowBlock - 1) / kRowBlock;
  std::atomic<int64_t> next{0};
  pool().run(threads, [&](int) {
    for (int64_t b; (b = next.fetch_add(1)) < count;) f(b, b * kRowBlock, std::min(n, (b + 1) * kRowBlock));
  });
}

// RMSNorm rows [r0, r1): y = x · rstd · g, rstd = 1/√(mean x² + ε), kept for the backward.
WHETSTONE_CLONES void rms_norm_rows(const float* x, const float* g, float* y, float* rstd, int64_t r0, int64_t r1,
                                    int64_t d, float eps) {
  for (int64_t r = r0; r < r1; r++) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    // In 16 lanes (see layer_norm_rows).
    v16 acc = {};
    int64_t j = 0;
    for (; j + L <= d; j += L) acc += load(xr + j) * load(xr + j);
    float sq = sum_lanes(acc);
    for (; j < d; j++) sq += xr[j] * xr[j];
    const float s = 1.f / std::sqrt(sq / static_cast<float>(d) + eps);
    for (int64_t j = 0; j < d; j++) yr[j] = xr[j] * s * g[j];
    rstd[r] = s;
  }
}

// Rows [r0, r1): dx, and this block's column sums of dy · x̂ into partial [d] (the gain's gradient).
WHETSTONE_CLONES void rms_norm_backward_rows(const float* dy, const float* x, const float* rstd, const float* g,
                                             float* dx, float* partial, int64_t r0, int64_t r1, int64_t d) {
  for (int64_t j = 0; j < d; j++) partial[j] = 0.f;
  for (int64_t r = r0; r < r1; r++) {
    const float* dyr = dy + r * d;
    const float* xr = x + r * d;
    const float s = rstd[r];
    v16 acc = {};
    int64_t j = 0;
    for (; j + L <= d; j += L) {
      const v16 dyv = load(dyr + j), xhat = load(xr + j) * s;
      acc += dyv * load(g + j) * xhat;
      store(partial + j, load(partial + j) + dyv * xhat);
    }
    float sgx = sum_lanes(acc);
    for (; j < d; j++) {
      const float xhat = xr[j] * s;
      sgx += dyr[j] * g[j] * xhat;
      partial[j] += dyr[j] * xhat;
    }
    const float slope = sgx / static_cast<float>(d);
    float* dxr = dx + r * d;
    for (int64_t j = 0; j < d; j++) dxr[j] = (dyr[j] * g[j] - xr[j] * s * slope) * s;
  }
}

// σ(x) for a block, through e^−x (exp_in_place: vectorised, no libm calls).
inline void sigmoid_block(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = -x[i];
  exp_in_place(out, n);
  for (int64_t i = 0; i < n; i++) out[i] = 1.f / (1.f + out[i]);
}

WHETSTONE_CLONES void swiglu_forward_block(const float* gate, const float* up, float* z, int64_t n) {
  thread_local std::vector<float> sig;
  sig.resize(n);
  sigmoid_block(gate, sig.data(), n);
  for (int64_t i = 0; i < n; i++) z[i] = gate[i] * sig[i] * up[i];
}

WHETSTONE_CLONES void swiglu_backward_block(const float* dz, const float* gate, const float* up, float* dgate,
                                            float* dup, int64_t n) {
  thread_local std::vector<float> sig;
  sig.resize(n);
  sigmoid_block(gate, sig.data(), n);
  for (int64_t i = 0; i < n; i++) {
    const float s = sig[i], silu = gate[i] * s;
    dup[i] = dz[i] * silu;
    dgate[i] = dz[i] * up[i] * (s + silu * (1.f - s));
  }
}

}  // namespace

void layer_norm_forward(const float* x, const float* gain, const float* bias, float* y, float* stats, int64_t n,
                        int64_t d, float eps, int threads) {
  row_blocks(n, d, threads, [&](int64_t, int64_t r0, int64_t r1) { layer_norm_rows(x, gain, bias, y, stats, r0, r1, d, eps); });
}

void layer_norm_backward(const float* dy, const float* x, const float* stats, const float* gain, float* dx,
                         float* dgain, float* dbias, int64_t n, int64_t d, int threads) {
  const int64_t blocks = (n + kRowBlock - 1) / kRowBlock;
  std::vector<float> partial(blocks * 2 * d);
  row_blocks(n, d, threads, [&](int64_t b, int64_t r0, int64_t r1) {
    layer_norm_backward_rows(dy, x, stats, gain, dx, partial.data() + b * 2 * d, r0, r1, d);
  });
  for (int64_t j = 0; j < d; j++) dgain[j] = dbias[j] = 0.f;
  for (int64_t b = 0; b < blocks; b++) {
    const float* p = partial.data() + b * 2 * d;
    for (int64_t j = 0; j < d; j++) {
      dgain[j] += p[j];
      dbias[j] += p[d + j];
    }
  }
}

WHETSTONE_CLONES void column_sums(const float* x, float* out, int64_t n, int64_t m) {
  for (int64_t j = 0; j < m; j++) out[j] = 0.f;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) out[j] += x[i * m + j];
}

void gelu_forward(const float* x, float* y, float* s, int64_t n, int threads) {
  blocks(n, threads, [&](int64_t at, int64_t len) { gelu_forward_block(x + at, y + at, s + at, len); });
}

void gelu_backward(const float* dy, const float* x, const float* s, float* dx, int64_t n, int threads) {
  blocks(n, threads, [&](int64_t at, int64_t len) { gelu_backward_block(dy + at, x + at, s + at, dx + at, len); });
}

void rms_norm_forward(const float* x, const float* gain, float* y, float* rstd, int64_t n, int64_t d, float eps,
                      int threads) {
  row_blocks(n, d, threads, [&](int64_t, int64_t r0, int64_t r1) { rms_norm_rows(x, gain, y, rstd, r0, r1, d, eps); });
}

void rms_norm_backward(const float* dy, const float* x, const float* rstd, const float* gain, float* dx, float* dgain,
                       int64_t n, int64_t d, int threads) {
  const int64_t blocks = (n + kRowBlock - 1) / kRowBlock;
  std::vector<float> partial(blocks * d);
  row_blocks(n, d, threads, [&](int64_t b, int64_t r0, int64_t r1) {
    rms_norm_backward_rows(dy, x, rstd, gain, dx, partial.data() + b * d, r0, r1, d);
  });
  for (int64_t j = 0; j < d; j++) dgain[j] = 0.f;
  for (int64_t b = 0; b < blocks; b++)
    for (int64_t j = 0; j < d; j++) dgain[j] += partial[b * d + j];
}

void swiglu_forward(const float* gate, const float* up, float* z, int64_t n, int threads) {
  blocks(n, threads, [&](int64_t at, int64_t len) { swiglu_forward_block(gate + at, up + at, z + at, len); });
}

void swiglu_backward(const float* dz, const float* gate, const float* up, float* dgate, float* dup, int64_t n,
                     int threads) {
  blocks(n, threads, [&](int64_t at, int64_t len) {
    swiglu_backward_block(dz + at, gate + at, up + at, dgate + at, dup + at, len);
  });
}

}  // namespace whetstone
