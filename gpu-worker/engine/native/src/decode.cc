// Products go through gemm() (one thread: a step's products are small); the rest are loops over
// rows compiled per CPU (target_clones) with the shared vectorisable exp.
#include "decode.h"

#include <cmath>

#include "gemm.h"
#include "vec16.h"
#include "vmath.h"

namespace whetstone {

namespace {

constexpr int L16 = 16;

// The sum of a vector's lanes by halving (4 shuffle-adds instead of a chain of 15 adds: a key's
// score was bound by that chain).
typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));
inline float hsum(v16 v) {
  const v8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const v4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
  return (b[0] + b[2]) + (b[1] + b[3]);
}

struct Buffers {
  std::vector<float> x, h, qkv, y, f, s, scores;
};

Buffers& buffers() {
  thread_local Buffers b;
  return b;
}

// y = x (n × k) · w (k × m) + b, on the calling thread: the whole step runs on one thread (with the
// pool's threads for its products and attention rows, sampling 64 rows was slower: waking them once
// per step, and handing out a dozen small jobs, cost more than they saved).
void affine(const float* x, const float* w, const float* b, float* y, int64_t n, int64_t k, int64_t m) {
  GemmArgs g{};
  g.a = x;
  g.b = w;
  g.c = y;
  g.bias = b;
  g.batch = 1;
  g.m = n;
  g.n = m;
  g.k = k;
  gemm(g, 1);
}

// Layer norm of each row, as the engine's kernel: one pass for both moments in double precision.
WHETSTONE_CLONES void layer_norm(const float* x, const float* g, const float* b, float* y, int64_t n, int64_t d,
                                 float eps) {
  for (int64_t r = 0; r < n; r++) {
    const float* xr = x + r * d;
    double sum = 0, sum2 = 0;
    for (int64_t j = 0; j < d; j++) {
      sum += xr[j];
      sum2 += static_cast<double>(xr[j]) * xr[j];
    }
    const double mean = sum / d;
    const float rstd = static_cast<float>(1 / std::sqrt(std::max(0.0, sum2 / d - mean * mean) + eps));
    const float shift = static_cast<float>(-mean) * rstd;
    float* yr = y + r * d;
    for (int64_t j = 0; j < d; j++) yr[j] = (xr[j] * rstd + shift) * g[j] + b[j];
  }
}

// GELU in place (x·σ(2u)), s is scratch of n floats.
WHETSTONE_CLONES void gelu_in_place(float* x, float* s, int64_t n) {
  constexpr float kC = 0.7978845608028654f, kA = 0.044715f;
  for (int64_t i = 0; i < n; i++) s[i] = -2.f * kC * (x[i] + kA * x[i] * x[i] * x[i]);
  exp_in_place(s, n);
  for (int64_t i = 0; i < n; i++) x[i] = x[i] / (1.f + s[i]);
}

// The step's attention for every row: scores into S [B·H][Tk], softmax, then y.
WHETSTONE_CLONES void attend_rows(const DecodeArgs& a, const DecodeLayer& L, const float* qkv, float* y, float* S) {
  const int64_t d = a.d, H = a.H, hd = d / H, Tk = a.past + 1, row = a.B * d, b0 = 0, b1 = a.B;
  const float scale = 1.f / std::sqrt(static_cast<float>(hd));
  for (int64_t t = 0; t < Tk; t++) {
    const float* kt = L.keys + t * row;
    for (int64_t b = b0; b < b1; b++) {
      // Masked keys as the tfjs path masks them: −1e9 added to the score.
      const float bias = a.key_mask[b * Tk + t] == 0.f ? -1e9f : 0.f;
      for (int64_t h = 0; h < H; h++) {
        const float* q = qkv + b * 3 * d + h * hd;
        const float* k = kt + b * d + h * hd;
        v16 acc = {};
        int64_t c = 0;
        for (; c + L16 <= hd; c += L16) acc += load(q + c) * load(k + c);
        float dot = hsum(acc);
        for (; c < hd; c++) dot += q[c] * k[c];
        S[(b * H + h) * Tk + t] = dot * scale + bias;
      }
    }
  }
  for (int64_t bh = b0 * H; bh < b1 * H; bh++) {
    float* s = S + bh * Tk;
    // Maximum and sum four ways: one running value would be a chain of dependent operations.
    float m4[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t t = 0;
    for (; t + 4 <= Tk; t += 4)
      for (int i = 0; i < 4; i++) m4[i] = std::max(m4[i], s[t + i]);
    for (; t < Tk; t++) m4[0] = std::max(m4[0], s[t]);
    const float m = std::max(std::max(m4[0], m4[1]), std::max(m4[2], m4[3]));
    for (t = 0; t < Tk; t++) s[t] -= m;
    exp_in_place(s, Tk);
    float s4[4] = {0.f, 0.f, 0.f, 0.f};
    for (t = 0; t + 4 <= Tk; t += 4)
      for (int i = 0; i < 4; i++) s4[i] += s[t + i];
    for (; t < Tk; t++) s4[0] += s[t];
    const float inv = 1.f / ((s4[0] + s4[1]) + (s4[2] + s4[3]));
    for (t = 0; t < Tk; t++) s[t] *= inv;
  }
  for (int64_t i = b0 * d; i < b1 * d; i++) y[i] = 0.f;
  for (int64_t t = 0; t < Tk; t++) {
    const float* vt = L.values + t * row;
    for (int64_t bh = b0 * H; bh < b1 * H; bh++) {
      const float w = S[bh * Tk + t];
      float* out = y + bh * hd;  // row b, head h: b·d + h·hd = bh·hd
      const float* v = vt + bh * hd;
      for (int64_t c = 0; c < hd; c++) out[c] += w * v[c];
    }
  }
}

// Append every row's key and value at `past`, then y_b,h = softmax(scale·q kᵀ, masked) v per row
// and head. The cache is time-major ([t][B·d]), so the loops run over positions outermost: one
// position's keys (or values) for every row and head are one contiguous block. Walking one head's
// keys instead strides B·d floats, which maps every key to the same L1 set.
void attend(const DecodeArgs& a, const DecodeLayer& L, const float* qkv, float* y, float* S) {
  const int64_t B = a.B, d = a.d, row = B * d;
  for (int64_t b = 0; b < B; b++) {
    const float* q = qkv + b * 3 * d;
    for (int64_t c = 0; c < d; c++) {
      L.keys[a.past * row + b * d + c] = q[d + c];
      L.values[a.past * row + b * d + c] = q[2 * d + c];
    }
  }
  attend_rows(a, L, qkv, y, S);
}

}  // namespace

void decode_step(const DecodeArgs& a) {
  const int64_t B = a.B, d = a.d;
  Buffers& buf = buffers();
  buf.x.resize(B * d);
  buf.h.resize(B * d);
  buf.qkv.resize(B * 3 * d);
  buf.y.resize(B * d);
  buf.f.resize(B * a.hid);
  buf.s.resize(B * a.hid);
  buf.scores.resize(B * a.H * (a.past + 1));
  float *x = buf.x.data(), *h = buf.h.data(), *y = buf.y.data();
  for (int64_t b = 0; b < B; b++)
    for (int64_t c = 0; c < d; c++) x[b * d + c] = a.wte[a.tokens[b] * d + c] + a.wpe[a.positions[b] * d + c];
  for (const DecodeLayer& L : a.layers) {
    layer_norm(x, L.ln1_g, L.ln1_b, h, B, d, a.eps);
    affine(h, L.qkv_w, L.qkv_b, buf.qkv.data(), B, d, 3 * d);
    attend(a, L, buf.qkv.data(), y, buf.scores.data());
    affine(y, L.proj_w, L.proj_b, h, B, d, d);
    for (int64_t i = 0; i < B * d; i++) x[i] += h[i];
    layer_norm(x, L.ln2_g, L.ln2_b, h, B, d, a.eps);
    affine(h, L.fc_w, L.fc_b, buf.f.data(), B, d, a.hid);
    gelu_in_place(buf.f.data(), buf.s.data(), B * a.hid);
    affine(buf.f.data(), L.out_w, L.out_b, h, B, a.hid, d);
    for (int64_t i = 0; i < B * d; i++) x[i] += h[i];
  }
  layer_norm(x, a.lnf_g, a.lnf_b, h, B, d, a.eps);
  affine(h, a.head, nullptr, a.logits, B, d, a.V);
}

}  // namespace whetstone
