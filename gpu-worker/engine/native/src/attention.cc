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

// Channel (b, h)'s q, k, v into the scratch layouts.
void gather(const float* qkv, const AttentionDims& d, int64_t b, int64_t h, Scratch& s) {
  const int64_t width = d.H * d.hd, stride = 3 * width;
  for (int64_t t = 0; t < d.T; t++) {
    const float* row = qkv + (b * d.T + t) * stride + h * d.hd;
    for (int64_t c = 0; c < d.hd; c++) {
      s.q[t * s.hdp + c] = row[c];
      s.k[t * s.hdp + c] = row[width + c];
      s.v[t * s.hdp + c] = row[2 * width + c];
      s.kt[c * s.Tl + t] = row[width + c];
      s.vt[c * s.Tl + t] = row[2 * width + c];
    }
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

// Σ_{j<n} w[j] · rows[j][c0 …] for one vector of a head's columns; rows [n][hdp]. Four accumulators
// (see dot_keys).
inline v16 mix_rows(const float* w, const float* rows, int64_t hdp, int64_t n, int64_t c0) {
  v16 a0 = {}, a1 = {}, a2 = {}, a3 = {};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    a0 += w[j] * load(rows + j * hdp + c0);
    a1 += w[j + 1] * load(rows + (j + 1) * hdp + c0);
    a2 += w[j + 2] * load(rows + (j + 2) * hdp + c0);
    a3 += w[j + 3] * load(rows + (j + 3) * hdp + c0);
  }
  for (; j < n; j++) a0 += w[j] * load(rows + j * hdp + c0);
  return (a0 + a1) + (a2 + a3);
}

WHETSTONE_CLONES void forward_channel(const float* qkv, float* P, float* y, const AttentionDims& d, int64_t ch) {
  const int64_t b = ch / d.H, h = ch % d.H, T = d.T, hd = d.hd, width = d.H * hd;
  Scratch& s = scratch();
  s.size(T, hd);
  gather(qkv, d, b, h, s);
  float* p = s.row.data();
  for (int64_t i = 0; i < T; i++) {
    const int64_t n = i + 1, nl = lanes(n);
    dot_keys(s.q.data() + i * s.hdp, s.kt.data(), hd, s.Tl, n, d.scale, p);
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
    float* out_p = P + (ch * T + i) * d.Tp;
    for (int64_t j = 0; j < n; j++) out_p[j] = p[j];
    for (int64_t j = n; j < d.Tp; j++) out_p[j] = 0.f;
    float* out = y + (b * T + i) * width + h * hd;
    for (int64_t c0 = 0; c0 < s.hdp; c0 += L) {
      alignas(64) float lane[L];
      store(lane, mix_rows(p, s.v.data(), s.hdp, n, c0));
      for (int64_t c = c0; c < std::min(c0 + L, hd); c++) out[c] = lane[c - c0];
    }
  }
}

WHETSTONE_CLONES void backward_channel(const float* qkv, const float* P, const float* dy, float* dqkv,
                                       const AttentionDims& d, int64_t ch) {
  const int64_t b = ch / d.H, h = ch % d.H, T = d.T, hd = d.hd, width = d.H * hd;
  Scratch& s = scratch();
  s.size(T, hd);
  gather(qkv, d, b, h, s);
  for (int64_t t = 0; t < T; t++) {
    const float* src = dy + (b * T + t) * width + h * hd;
    for (int64_t c = 0; c < hd; c++) s.dy[t * s.hdp + c] = src[c];
  }
  std::fill(s.dk.begin(), s.dk.end(), 0.f);
  std::fill(s.dv.begin(), s.dv.end(), 0.f);
  float* ds = s.row.data();
  for (int64_t i = 0; i < T; i++) {
    const float* p = P + (ch * T + i) * d.Tp;
    const float* dyi = s.dy.data() + i * s.hdp;
    const float* qi = s.q.data() + i * s.hdp;
    float* dqi = s.dq.data() + i * s.hdp;
    const int64_t n = i + 1;
    // dP_ij = dy_i · v_j
    dot_keys(dyi, s.vt.data(), hd, s.Tl, n, 1.f, ds);
    // Softmax backward: dS_ij = P_ij (dP_ij − Σ_j P_ij dP_ij), times the scores' scale.
    // In lanes (vec16.h's sum_lanes), the last n mod 16 one by one: P's rows may end there.
    v16 dv = {};
    int64_t j0 = 0;
    for (; j0 + L <= n; j0 += L) dv += load(p + j0) * load(ds + j0);
    float dot = sum_lanes(dv);
    for (int64_t j = j0; j < n; j++) dot += p[j] * ds[j];
    for (int64_t j = 0; j < n; j++) ds[j] = d.scale * p[j] * (ds[j] - dot);
    for (int64_t c0 = 0; c0 < s.hdp; c0 += L) {
      const v16 dyv = load(dyi + c0), qv = load(qi + c0);
      for (int64_t j = 0; j < n; j++) {
        // dv_j += P_ij dy_i; dk_j += dS_ij q_i (independent rows: no chain)
        float* dvj = s.dv.data() + j * s.hdp + c0;
        float* dkj = s.dk.data() + j * s.hdp + c0;
        store(dvj, load(dvj) + p[j] * dyv);
        store(dkj, load(dkj) + ds[j] * qv);
      }
      // dq_i = Σ_j dS_ij k_j (row i's alone: nothing to add to)
      store(dqi + c0, mix_rows(ds, s.k.data(), s.hdp, n, c0));
    }
  }
  const int64_t stride = 3 * width;
  for (int64_t t = 0; t < T; t++) {
    float* row = dqkv + (b * T + t) * stride + h * hd;
    for (int64_t c = 0; c < hd; c++) {
      row[c] = s.dq[t * s.hdp + c];
      row[width + c] = s.dk[t * s.hdp + c];
      row[2 * width + c] = s.dv[t * s.hdp + c];
    }
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
