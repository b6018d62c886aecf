// Each channel (b, h) is one work item: its q, k and v are gathered into zero-padded scratch (and
// k, v also transposed, [hd][T]) so that every inner loop works on whole vectors of 16 floats
// (16 keys, or 16 of a head's columns) without a horizontal reduction, compiled for the CPU at
// hand (target_clones: AVX-512, AVX2 or the baseline, chosen at load time). A channel's rows of dqkv and y belong to it alone, so channels
// run in parallel without locks, and each value is computed in one fixed order whatever the
// thread count.
#include "attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "pool.h"
#include "vec16.h"
#include "vmath.h"


namespace whetstone {

namespace {

using Scratch = AttentionScratch;
inline Scratch& scratch() { return attention_scratch(); }

// Channel (b, h)'s q, k and v into the scratch layouts: the rows as they are (whole copies), and
// transposed ([hd][Tl], one float at a time) only the operand that is read by keys: k for the
// forward's scores, v for the backward's dP. (Copying all five layouts, float by float, was a
// quarter of the kernels' time.)
void gather(const float* qkv, const AttentionDims& d, int64_t b, int64_t h, Scratch& s, bool forward) {
  const int64_t width = d.H * d.hd, stride = 3 * width, hd = d.hd;
  const size_t bytes = hd * sizeof(float);
  float* trans = forward ? s.kt.data() : s.vt.data();
  const int64_t trans_at = forward ? width : 2 * width;
  for (int64_t t = 0; t < d.T; t++) {
    const float* row = qkv + (b * d.T + t) * stride + h * hd;
    std::memcpy(s.q.data() + t * s.hdp, row, bytes);
    std::memcpy(s.k.data() + t * s.hdp, row + width, bytes);
    std::memcpy(s.v.data() + t * s.hdp, row + 2 * width, bytes);
    for (int64_t c = 0; c < hd; c++) trans[c * s.Tl + t] = row[trans_at + c];
  }
}

// out[j] = a · (x · col_j) for the first ⌈n/16⌉ vectors of keys; cols [hd][Tl]. Four accumulators,
// added in a fixed order at the end: one would be a chain of dependent multiply-adds, each waiting
// for the last (with small heads that latency was most of the kernel's time).
inline void dot_keys(const float* x, const float* cols, int64_t hd, int64_t Tl, int64_t n, float a, float* out) {
  for (int64_t j = 0; j < n; j += L) {
    v16 a0 = {}, a1 = {}, a2 = {}, a3 = {};
    int64_t c = 0;
    for (; c + 4 <= hd; c += 4) {
      a0 += x[c] * load(cols + c * Tl + j);
      a1 += x[c + 1] * load(cols + (c + 1) * Tl + j);
      a2 += x[c + 2] * load(cols + (c + 2) * Tl + j);
      a3 += x[c + 3] * load(cols + (c + 3) * Tl + j);
    }
    for (; c < hd; c++) a0 += x[c] * load(cols + c * Tl + j);
    store(out + j, ((a0 + a1) + (a2 + a3)) * a);
  }
}

// Query rows per block, forward and backward: each key's vectors (k, v; and in the backward its
// d k and d v, read and written) are loaded once per block instead of once per row (that traffic
// bound the kernels), and the block's rows are independent sums that overlap.
constexpr int64_t kRows = 4;

// Scores of a block's rows: out[r][j] = a · (q_r · col_j) for the first ⌈n/16⌉ vectors of keys;
// q rows r at q + r·hdp, out rows at out + r·Tl, cols [hd][Tl] loaded once for all of them.
inline void dot_keys_rows(const float* q, int64_t hdp, const float* cols, int64_t hd, int64_t Tl, int64_t n, float a,
                          float* out) {
  for (int64_t j = 0; j < n; j += L) {
    v16 acc[kRows] = {};
    for (int64_t c = 0; c < hd; c++) {
      const v16 col = load(cols + c * Tl + j);
      for (int64_t r = 0; r < kRows; r++) acc[r] += q[r * hdp + c] * col;
    }
    for (int64_t r = 0; r < kRows; r++) store(out + r * Tl + j, acc[r] * a);
  }
}

// Row p (n keys, room for nl = lanes(n)) to its softmax in place; lanes from n on end as 0.
inline void softmax_row(float* p, int64_t n) {
  const int64_t nl = lanes(n);
  // Whole vectors for the maximum, the exponentials and the sum (vec16.h's sum_lanes says why):
  // the lanes past the query's keys are −∞, so e^{−∞} = 0 adds nothing.
  for (int64_t j = n; j < nl; j++) p[j] = -INFINITY;
  v16 mv = load(p);
  for (int64_t j = L; j < nl; j += L) {
    const v16 v = load(p + j);
    mv = mv > v ? mv : v;
  }
  const float m = max_lanes(mv);
  for (int64_t j = 0; j < nl; j++) p[j] -= m;
  exp_in_place(p, nl);
  v16 sv = {};
  for (int64_t j = 0; j < nl; j += L) sv += load(p + j);
  const float inv = 1.f / sum_lanes(sv);
  for (int64_t j = 0; j < n; j++) p[j] *= inv;
}

WHETSTONE_CLONES void forward_channel(const float* qkv, float* P, float* y, const AttentionDims& d, int64_t ch) {
  const int64_t b = ch / d.H, h = ch % d.H, T = d.T, hd = d.hd, width = d.H * hd;
  Scratch& s = scratch();
  s.size(T, hd);
  gather(qkv, d, b, h, s, true);
  // The block's probability rows; a row's lanes past its keys are 0 (rows past T: all 0).
  thread_local std::vector<float> block;
  block.assign(kRows * s.Tl, 0.f);
  thread_local std::vector<float> qrows;
  qrows.assign(kRows * s.hdp, 0.f);
  for (int64_t i0 = 0; i0 < T; i0 += kRows) {
    const int64_t rows = std::min(kRows, T - i0), nmax = i0 + rows;
    // The block's queries (zero rows past T), then every row's scores against keys 0 … nmax − 1.
    std::fill(qrows.begin(), qrows.end(), 0.f);
    std::memcpy(qrows.data(), s.q.data() + i0 * s.hdp, rows * s.hdp * sizeof(float));
    dot_keys_rows(qrows.data(), s.hdp, s.kt.data(), hd, s.Tl, nmax, d.scale, block.data());
    for (int64_t r = 0; r < kRows; r++) {
      float* p = block.data() + r * s.Tl;
      if (r >= rows) {
        std::fill(p, p + lanes(nmax), 0.f);
        continue;
      }
      const int64_t i = i0 + r, n = i + 1;
      softmax_row(p, n);
      for (int64_t j = n; j < lanes(nmax); j++) p[j] = 0.f;
      float* out_p = P + (ch * T + i) * d.Tp;
      for (int64_t j = 0; j < n; j++) out_p[j] = p[j];
      for (int64_t j = n; j < d.Tp; j++) out_p[j] = 0.f;
    }
    for (int64_t c0 = 0; c0 < s.hdp; c0 += L) {
      v16 acc[kRows] = {};
      for (int64_t j = 0; j < nmax; j++) {
        const v16 vj = load(s.v.data() + j * s.hdp + c0);
        for (int64_t r = 0; r < kRows; r++) acc[r] += block[r * s.Tl + j] * vj;
      }
      for (int64_t r = 0; r < rows; r++) {
        alignas(64) float lane[L];
        store(lane, acc[r]);
        float* out = y + (b * T + i0 + r) * width + h * hd;
        for (int64_t c = c0; c < std::min(c0 + L, hd); c++) out[c] = lane[c - c0];
      }
    }
  }
}

WHETSTONE_CLONES void backward_channel(const float* qkv, const float* P, const float* dy, float* dqkv,
                                       const AttentionDims& d, int64_t ch) {
  const int64_t b = ch / d.H, h = ch % d.H, T = d.T, hd = d.hd, width = d.H * hd;
  Scratch& s = scratch();
  s.size(T, hd);
  gather(qkv, d, b, h, s, false);
  for (int64_t t = 0; t < T; t++) std::memcpy(s.dy.data() + t * s.hdp, dy + (b * T + t) * width + h * hd, hd * sizeof(float));
  std::fill(s.dk.begin(), s.dk.end(), 0.f);
  std::fill(s.dv.begin(), s.dv.end(), 0.f);
  // A block's P rows and dS rows, zero past each row's keys (and for rows past T).
  thread_local std::vector<float> block;
  block.assign(2 * kRows * s.Tl, 0.f);
  float* pr = block.data();
  float* dsr = pr + kRows * s.Tl;
  for (int64_t i0 = 0; i0 < T; i0 += kRows) {
    const int64_t rows = std::min(kRows, T - i0), nmax = i0 + rows;
    for (int64_t r = 0; r < kRows; r++) {
      float* pi = pr + r * s.Tl;
      float* ds = dsr + r * s.Tl;
      if (r >= rows) {
        std::fill(pi, pi + nmax, 0.f);
        std::fill(ds, ds + nmax, 0.f);
        continue;
      }
      const int64_t i = i0 + r, n = i + 1;
      const float* p = P + (ch * T + i) * d.Tp;
      // dP_ij = dy_i · v_j
      dot_keys(s.dy.data() + i * s.hdp, s.vt.data(), hd, s.Tl, n, 1.f, ds);
      // Softmax backward: dS_ij = P_ij (dP_ij − Σ_j P_ij dP_ij), times the scores' scale.
      // In lanes (vec16.h's sum_lanes), the last n mod 16 one by one: P's rows may end there.
      v16 dv = {};
      int64_t j0 = 0;
      for (; j0 + L <= n; j0 += L) dv += load(p + j0) * load(ds + j0);
      float dot = sum_lanes(dv);
      for (int64_t j = j0; j < n; j++) dot += p[j] * ds[j];
      for (int64_t j = 0; j < n; j++) {
        pi[j] = p[j];
        ds[j] = d.scale * p[j] * (ds[j] - dot);
      }
      for (int64_t j = n; j < nmax; j++) pi[j] = ds[j] = 0.f;
    }
    for (int64_t c0 = 0; c0 < s.hdp; c0 += L) {
      v16 dyv[kRows], qv[kRows], dq[kRows];
      for (int64_t r = 0; r < kRows; r++) {
        const int64_t i = std::min(i0 + r, T - 1);  // rows past T have zero weights
        dyv[r] = load(s.dy.data() + i * s.hdp + c0);
        qv[r] = load(s.q.data() + i * s.hdp + c0);
        dq[r] = v16{};
      }
      for (int64_t j = 0; j < nmax; j++) {
        // dv_j += P_ij dy_i; dk_j += dS_ij q_i, rows in order; dq_i += dS_ij k_j.
        float* dvj = s.dv.data() + j * s.hdp + c0;
        float* dkj = s.dk.data() + j * s.hdp + c0;
        const v16 kj = load(s.k.data() + j * s.hdp + c0);
        v16 dvv = load(dvj), dkv = load(dkj);
        for (int64_t r = 0; r < kRows; r++) {
          const float pw = pr[r * s.Tl + j], sw = dsr[r * s.Tl + j];
          dvv += pw * dyv[r];
          dkv += sw * qv[r];
          dq[r] += sw * kj;
        }
        store(dvj, dvv);
        store(dkj, dkv);
      }
      for (int64_t r = 0; r < rows; r++) store(s.dq.data() + (i0 + r) * s.hdp + c0, dq[r]);
    }
  }
  const int64_t stride = 3 * width;
  for (int64_t t = 0; t < T; t++) {
    float* row = dqkv + (b * T + t) * stride + h * hd;
    std::memcpy(row, s.dq.data() + t * s.hdp, hd * sizeof(float));
    std::memcpy(row + width, s.dk.data() + t * s.hdp, hd * sizeof(float));
    std::memcpy(row + 2 * width, s.dv.data() + t * s.hdp, hd * sizeof(float));
  }
}

// Channels on the pool, one at a time from a shared counter; one thread when the work is small.
template <typename F>
void each_channel(const AttentionDims& d, int threads, F f) {
  const int64_t channels = d.B * d.H;
  if (channels * d.T * d.T * d.hd < (1 << 18)) threads = 1;
  std::atomic<int64_t> next{0};
  pool().run(threads, [&](int) {
    for (int64_t ch; (ch = next.fetch_add(1)) < channels;) f(ch);
  });
}

}  // namespace

void attention_forward(const float* qkv, float* P, float* y, const AttentionDims& d, int threads) {
  each_channel(d, threads, [&](int64_t ch) { forward_channel(qkv, P, y, d, ch); });
}

void attention_backward(const float* qkv, const float* P, const float* dy, float* dqkv, const AttentionDims& d,
                        int threads) {
  each_channel(d, threads, [&](int64_t ch) { backward_channel(qkv, P, dy, dqkv, d, ch); });
}

}  // namespace whetstone
