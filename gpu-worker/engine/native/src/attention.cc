// Each channel (b, h) is one work item: its q, k and v are gathered into contiguous scratch (and
// k, v also transposed, [hd][T]) so that every inner loop runs over contiguous floats without a
// reduction, which the compiler vectorises for the CPU at hand (target_clones: AVX-512, AVX2 or the
// baseline, chosen at load time). A channel's rows of dqkv and y belong to it alone, so channels
// run in parallel without locks, and each value is computed in one fixed order whatever the
// thread count.
#include "attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "pool.h"

#if defined(__x86_64__)
#define WHETSTONE_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#else
#define WHETSTONE_CLONES
#endif

namespace whetstone {

namespace {

// e^x in place, vectorisable (no calls, no branches): Cephes' single-precision polynomial on
// x − n·ln 2 (|·| ≤ ln 2 / 2), times 2^n built in the exponent bits; within 2 ulp for x ≥ −87.
// libm's expf, called per element, was most of the forward's time.
inline void exp_in_place(float* x, int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    float v = std::min(std::max(x[j], -87.3f), 88.7f);
    // Round to the nearest integer by the 1.5·2²³ trick (no rounding call, so it vectorises).
    const float k = (v * 1.44269504088896341f + 12582912.f) - 12582912.f;
    v = v - k * 0.693359375f;
    v = v - k * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * v + 1.3981999507e-3f;
    p = p * v + 8.3334519073e-3f;
    p = p * v + 4.1665795894e-2f;
    p = p * v + 1.6666665459e-1f;
    p = p * v + 5.0000001201e-1f;
    p = p * v * v + v + 1.f;
    const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    x[j] = p * scale;
  }
}

struct Scratch {
  std::vector<float> q, k, v, kt, vt, dy, dq, dk, dv, row;
  void size(int64_t T, int64_t hd) {
    for (auto* b : {&q, &k, &v, &kt, &vt, &dy, &dq, &dk, &dv}) b->assign(T * hd, 0.f);
    row.assign(T, 0.f);
  }
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Channel (b, h)'s q, k, v rows [T][hd] and k, v transposed [hd][T].
void gather(const float* qkv, const AttentionDims& d, int64_t b, int64_t h, Scratch& s) {
  const int64_t width = d.H * d.hd, stride = 3 * width;
  for (int64_t t = 0; t < d.T; t++) {
    const float* row = qkv + (b * d.T + t) * stride + h * d.hd;
    for (int64_t c = 0; c < d.hd; c++) {
      s.q[t * d.hd + c] = row[c];
      s.k[t * d.hd + c] = row[width + c];
      s.v[t * d.hd + c] = row[2 * width + c];
      s.kt[c * d.T + t] = row[width + c];
      s.vt[c * d.T + t] = row[2 * width + c];
    }
  }
}

WHETSTONE_CLONES void forward_channel(const float* qkv, float* P, float* y, const AttentionDims& d, int64_t ch) {
  const int64_t b = ch / d.H, h = ch % d.H, T = d.T, hd = d.hd, width = d.H * hd;
  Scratch& s = scratch();
  if (static_cast<int64_t>(s.row.size()) != T || static_cast<int64_t>(s.q.size()) != T * hd) s.size(T, hd);
  gather(qkv, d, b, h, s);
  float* acc = s.dq.data();  // one row of hd
  for (int64_t i = 0; i < T; i++) {
    float* p = P + (ch * T + i) * d.Tp;
    const int64_t n = i + 1;
    for (int64_t j = 0; j < n; j++) p[j] = 0.f;
    for (int64_t c = 0; c < hd; c++) {
      const float qc = s.q[i * hd + c] * d.scale;
      const float* kc = s.kt.data() + c * T;
      for (int64_t j = 0; j < n; j++) p[j] += qc * kc[j];
    }
    float m = p[0];
    for (int64_t j = 1; j < n; j++) m = std::max(m, p[j]);
    for (int64_t j = 0; j < n; j++) p[j] -= m;
    exp_in_place(p, n);
    float sum = 0.f;
    for (int64_t j = 0; j < n; j++) sum += p[j];
    const float inv = 1.f / sum;
    for (int64_t j = 0; j < n; j++) p[j] *= inv;
    for (int64_t j = n; j < d.Tp; j++) p[j] = 0.f;
    for (int64_t c = 0; c < hd; c++) acc[c] = 0.f;
    for (int64_t j = 0; j < n; j++) {
      const float w = p[j];
      const float* vj = s.v.data() + j * hd;
      for (int64_t c = 0; c < hd; c++) acc[c] += w * vj[c];
    }
    float* out = y + (b * T + i) * width + h * hd;
    for (int64_t c = 0; c < hd; c++) out[c] = acc[c];
  }
}

WHETSTONE_CLONES void backward_channel(const float* qkv, const float* P, const float* dy, float* dqkv,
                                       const AttentionDims& d, int64_t ch) {
  const int64_t b = ch / d.H, h = ch % d.H, T = d.T, hd = d.hd, width = d.H * hd;
  Scratch& s = scratch();
  if (static_cast<int64_t>(s.row.size()) != T || static_cast<int64_t>(s.q.size()) != T * hd) s.size(T, hd);
  gather(qkv, d, b, h, s);
  for (int64_t t = 0; t < T; t++) {
    const float* src = dy + (b * T + t) * width + h * hd;
    for (int64_t c = 0; c < hd; c++) s.dy[t * hd + c] = src[c];
  }
  std::fill(s.dq.begin(), s.dq.end(), 0.f);
  std::fill(s.dk.begin(), s.dk.end(), 0.f);
  std::fill(s.dv.begin(), s.dv.end(), 0.f);
  float* ds = s.row.data();
  for (int64_t i = 0; i < T; i++) {
    const float* p = P + (ch * T + i) * d.Tp;
    const float* dyi = s.dy.data() + i * hd;
    const int64_t n = i + 1;
    // dP_ij = dy_i · v_j; dv_j += P_ij dy_i
    for (int64_t j = 0; j < n; j++) ds[j] = 0.f;
    for (int64_t c = 0; c < hd; c++) {
      const float g = dyi[c];
      const float* vc = s.vt.data() + c * T;
      for (int64_t j = 0; j < n; j++) ds[j] += g * vc[j];
    }
    for (int64_t j = 0; j < n; j++) {
      const float w = p[j];
      float* dvj = s.dv.data() + j * hd;
      for (int64_t c = 0; c < hd; c++) dvj[c] += w * dyi[c];
    }
    // Softmax backward: dS_ij = P_ij (dP_ij − Σ_j P_ij dP_ij), scaled for the scores' scale.
    float dot = 0.f;
    for (int64_t j = 0; j < n; j++) dot += p[j] * ds[j];
    for (int64_t j = 0; j < n; j++) ds[j] = d.scale * p[j] * (ds[j] - dot);
    // dq_i += Σ_j dS_ij k_j; dk_j += dS_ij q_i
    float* dqi = s.dq.data() + i * hd;
    const float* qi = s.q.data() + i * hd;
    for (int64_t j = 0; j < n; j++) {
      const float w = ds[j];
      const float* kj = s.k.data() + j * hd;
      float* dkj = s.dk.data() + j * hd;
      for (int64_t c = 0; c < hd; c++) {
        dqi[c] += w * kj[c];
        dkj[c] += w * qi[c];
      }
    }
  }
  const int64_t stride = 3 * width;
  for (int64_t t = 0; t < T; t++) {
    float* row = dqkv + (b * T + t) * stride + h * hd;
    for (int64_t c = 0; c < hd; c++) {
      row[c] = s.dq[t * hd + c];
      row[width + c] = s.dk[t * hd + c];
      row[2 * width + c] = s.dv[t * hd + c];
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
