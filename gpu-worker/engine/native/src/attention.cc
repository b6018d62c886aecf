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

// out[j] = a · (x · col_j) for the first ⌈n/16⌉ vectors of keys; cols [hd][Tl].
inline void dot_keys(const float* x, const float* cols, int64_t hd, int64_t Tl, int64_t n, float a, float* out) {
  for (int64_t j = 0; j < n; j += L) {
    v16 acc = {};
    for (int64_t c = 0; c < hd; c++) acc += x[c] * load(cols + c * Tl + j);
    store(out + j, acc * a);
  }
}

WHETSTONE_CLONES void forward_channel(const float* qkv, float* P, float* y, const AttentionDims& d, int64_t ch) {
  const int64_t b = ch / d.H, h = ch % d.H, T = d.T, hd = d.hd, width = d.H * hd;
  Scratch& s = scratch();
  s.size(T, hd);
  gather(qkv, d, b, h, s);
  float* p = s.row.data();
  for (int64_t i = 0; i < T; i++) {
    const int64_t n = i + 1;
    dot_keys(s.q.data() + i * s.hdp, s.kt.data(), hd, s.Tl, n, d.scale, p);
    float m = p[0];
    for (int64_t j = 1; j < n; j++) m = std::max(m, p[j]);
    for (int64_t j = 0; j < n; j++) p[j] -= m;
    exp_in_place(p, n);
    float sum = 0.f;
    for (int64_t j = 0; j < n; j++) sum += p[j];
    const float inv = 1.f / sum;
    for (int64_t j = 0; j < n; j++) p[j] *= inv;
    float* out_p = P + (ch * T + i) * d.Tp;
    for (int64_t j = 0; j < n; j++) out_p[j] = p[j];
    for (int64_t j = n; j < d.Tp; j++) out_p[j] = 0.f;
    float* out = y + (b * T + i) * width + h * hd;
    for (int64_t c0 = 0; c0 < s.hdp; c0 += L) {
      v16 acc = {};
      for (int64_t j = 0; j < n; j++) acc += p[j] * load(s.v.data() + j * s.hdp + c0);
      alignas(64) float lane[L];
      store(lane, acc);
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
  std::fill(s.dq.begin(), s.dq.end(), 0.f);
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
    float dot = 0.f;
    for (int64_t j = 0; j < n; j++) dot += p[j] * ds[j];
    for (int64_t j = 0; j < n; j++) ds[j] = d.scale * p[j] * (ds[j] - dot);
    for (int64_t c0 = 0; c0 < s.hdp; c0 += L) {
      const v16 dyv = load(dyi + c0), qv = load(qi + c0);
      v16 dq = load(dqi + c0);
      for (int64_t j = 0; j < n; j++) {
        // dv_j += P_ij dy_i; dq_i += dS_ij k_j; dk_j += dS_ij q_i
        float* dvj = s.dv.data() + j * s.hdp + c0;
        float* dkj = s.dk.data() + j * s.hdp + c0;
        store(dvj, load(dvj) + p[j] * dyv);
        dq += ds[j] * load(s.k.data() + j * s.hdp + c0);
        store(dkj, load(dkj) + ds[j] * qv);
      }
      store(dqi + c0, dq);
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
