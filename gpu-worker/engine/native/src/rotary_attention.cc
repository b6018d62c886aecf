// See rotary_attention.h. The structure is attention.cc's (a zero-padded per-thread scratch, whole
// 16-float vectors in the inner loops, one fixed summation order whatever the thread count), with
// a work item per key/value head (b, g): its rotated keys and values are gathered once and serve
// the H / Hkv query heads in turn, and the gradients of k and v gather all of them without locks.
// Doing the rotation here spares the tfjs path's slices, products, concatenations and their
// gradients on every q and k, and the repeated keys and values of grouped-query attention.
#include "rotary_attention.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "pool.h"
#include "vec16.h"
#include "vmath.h"

namespace whetstone {

namespace {

using Scratch = AttentionScratch;
inline Scratch& scratch() { return attention_scratch(); }

// The rotation's tables at sequence b, position t.
inline int64_t table_row(const RotaryAttentionDims& d, int64_t b, int64_t t) { return ((d.R == 1 ? 0 : b) * d.T + t) * (d.hd / 2); }

// rot(x) of one head's row into out: (x1·cos − x2·sin, x2·cos + x1·sin).
inline void rotate(const float* x, const float* c, const float* s, int64_t half, float* out) {
  for (int64_t i = 0; i < half; i++) {
    out[i] = x[i] * c[i] - x[i + half] * s[i];
    out[i + half] = x[i + half] * c[i] + x[i] * s[i];
  }
}

// The transposed rotation (the gradient through rot): (g1·cos + g2·sin, g2·cos − g1·sin).
inline void unrotate(const float* g, const float* c, const float* s, int64_t half, float* out) {
  for (int64_t i = 0; i < half; i++) {
    out[i] = g[i] * c[i] + g[i + half] * s[i];
    out[i + half] = g[i + half] * c[i] - g[i] * s[i];
  }
}

// Group (b, g)'s rotated keys and its values, in rows and transposed.
void gather_kv(const float* k, const float* v, const float* cos, const float* sin, const RotaryAttentionDims& d,
               int64_t b, int64_t g, Scratch& s) {
  const int64_t stride = d.Hkv * d.hd, half = d.hd / 2;
  for (int64_t t = 0; t < d.T; t++) {
    const int64_t at = (b * d.T + t) * stride + g * d.hd, tab = table_row(d, b, t);
    float* kr = s.k.data() + t * s.hdp;
    rotate(k + at, cos + tab, sin + tab, half, kr);
    for (int64_t c = 0; c < d.hd; c++) {
      s.v[t * s.hdp + c] = v[at + c];
      s.kt[c * s.Tl + t] = kr[c];
      s.vt[c * s.Tl + t] = v[at + c];
    }
  }
}

// Query head h of sequence b, rotated, into s.q.
void gather_q(const float* q, const float* cos, const float* sin, const RotaryAttentionDims& d, int64_t b, int64_t h,
              Scratch& s) {
  const int64_t stride = d.H * d.hd, half = d.hd / 2;
  for (int64_t t = 0; t < d.T; t++) {
    const int64_t tab = table_row(d, b, t);
    rotate(q + (b * d.T + t) * stride + h * d.hd, cos + tab, sin + tab, half, s.q.data() + t * s.hdp);
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

WHETSTONE_CLONES void forward_group(const float* q, const float* k, const float* v, const float* cos, const float* sin,
                                    float* P, float* y, const RotaryAttentionDims& d, int64_t group) {
  const int64_t b = group / d.Hkv, g = group % d.Hkv, T = d.T, hd = d.hd, r = d.H / d.Hkv;
  Scratch& s = scratch();
  s.size(T, hd);
  gather_kv(k, v, cos, sin, d, b, g, s);
  float* p = s.row.data();
  for (int64_t h = g * r; h < (g + 1) * r; h++) {
    gather_q(q, cos, sin, d, b, h, s);
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
      float* out_p = P + ((b * d.H + h) * T + i) * d.Tp;
      for (int64_t j = 0; j < n; j++) out_p[j] = p[j];
      for (int64_t j = n; j < d.Tp; j++) out_p[j] = 0.f;
      float* out = y + (b * T + i) * d.H * hd + h * hd;
      for (int64_t c0 = 0; c0 < s.hdp; c0 += L) {
        v16 acc = {};
        for (int64_t j = 0; j < n; j++) acc += p[j] * load(s.v.data() + j * s.hdp + c0);
        alignas(64) float lane[L];
        store(lane, acc);
        for (int64_t c = c0; c < std::min(c0 + L, hd); c++) out[c] = lane[c - c0];
      }
    }
  }
}

WHETSTONE_CLONES void backward_group(const float* q, const float* k, const float* v, const float* cos,
                                     const float* sin, const float* P, const float* dy, float* dq, float* dk,
                                     float* dv, const RotaryAttentionDims& d, int64_t group) {
  const int64_t b = group / d.Hkv, g = group % d.Hkv, T = d.T, hd = d.hd, r = d.H / d.Hkv, half = hd / 2;
  Scratch& s = scratch();
  s.size(T, hd);
  gather_kv(k, v, cos, sin, d, b, g, s);
  std::fill(s.dk.begin(), s.dk.end(), 0.f);
  std::fill(s.dv.begin(), s.dv.end(), 0.f);
  float* ds = s.row.data();
  for (int64_t h = g * r; h < (g + 1) * r; h++) {
    gather_q(q, cos, sin, d, b, h, s);
    for (int64_t t = 0; t < T; t++) {
      const float* src = dy + (b * T + t) * d.H * hd + h * hd;
      for (int64_t c = 0; c < hd; c++) s.dy[t * s.hdp + c] = src[c];
    }
    std::fill(s.dq.begin(), s.dq.end(), 0.f);
    for (int64_t i = 0; i < T; i++) {
      const float* p = P + ((b * d.H + h) * T + i) * d.Tp;
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
        v16 acc = load(dqi + c0);
        for (int64_t j = 0; j < n; j++) {
          // dv_j += P_ij dy_i; dq_i += dS_ij k_j; dk_j += dS_ij q_i (rotated q and k)
          float* dvj = s.dv.data() + j * s.hdp + c0;
          float* dkj = s.dk.data() + j * s.hdp + c0;
          store(dvj, load(dvj) + p[j] * dyv);
          acc += ds[j] * load(s.k.data() + j * s.hdp + c0);
          store(dkj, load(dkj) + ds[j] * qv);
        }
        store(dqi + c0, acc);
      }
    }
    for (int64_t t = 0; t < T; t++) {
      const int64_t tab = table_row(d, b, t);
      unrotate(s.dq.data() + t * s.hdp, cos + tab, sin + tab, half, dq + (b * T + t) * d.H * hd + h * hd);
    }
  }
  for (int64_t t = 0; t < T; t++) {
    const int64_t at = (b * T + t) * d.Hkv * hd + g * hd, tab = table_row(d, b, t);
    unrotate(s.dk.data() + t * s.hdp, cos + tab, sin + tab, half, dk + at);
    for (int64_t c = 0; c < hd; c++) dv[at + c] = s.dv[t * s.hdp + c];
  }
}

// Groups on the pool, one at a time from a shared counter; one thread when the work is small.
template <typename F>
void each_group(const RotaryAttentionDims& d, int threads, F f) {
  const int64_t groups = d.B * d.Hkv;
  if (d.B * d.H * d.T * d.T * d.hd < (1 << 18)) threads = 1;
  std::atomic<int64_t> next{0};
  pool().run(threads, [&](int) {
    for (int64_t g; (g = next.fetch_add(1)) < groups;) f(g);
  });
}

}  // namespace

void rotary_attention_forward(const float* q, const float* k, const float* v, const float* cos, const float* sin,
                              float* P, float* y, const RotaryAttentionDims& d, int threads) {
  each_group(d, threads, [&](int64_t g) { forward_group(q, k, v, cos, sin, P, y, d, g); });
}

void rotary_attention_backward(const float* q, const float* k, const float* v, const float* cos, const float* sin,
                               const float* P, const float* dy, float* dq, float* dk, float* dv,
                               const RotaryAttentionDims& d, int threads) {
  each_group(d, threads, [&](int64_t g) { backward_group(q, k, v, cos, sin, P, dy, dq, dk, dv, d, g); });
}

}  // namespace whetstone
