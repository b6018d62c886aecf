// Sixteen floats: one AVX-512 register, two AVX2 ones, four SSE ones (GCC lowers the type to
// whatever a target_clones clone has), with unaligned loads and stores; and the per-thread,
// zero-padded scratch of the training attention kernels (attention.cc, rotary_attention.cc).
#pragma once
#include <cstdint>
#include <vector>

namespace whetstone {

typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));
constexpr int64_t L = 16;

inline v16 load(const float* p) { return *reinterpret_cast<const v16u*>(p); }
inline void store(float* p, v16 v) { *reinterpret_cast<v16u*>(p) = v; }
/** n rounded up to whole vectors. */
inline int64_t lanes(int64_t n) { return (n + L - 1) / L * L; }

// A vector's lanes summed, or their maximum, in lane order (a fixed order: the same bits on any
// thread). Reductions kept in 16 lanes and folded once at the end: a scalar loop would be one chain
// of dependent adds (or comparisons), which the compiler may not reorder.
__attribute__((always_inline)) inline float sum_lanes(v16 v) {
  float s = 0.f;
  for (int64_t l = 0; l < L; l++) s += v[l];
  return s;
}
__attribute__((always_inline)) inline float max_lanes(v16 v) {
  float m = v[0];
  for (int64_t l = 1; l < L; l++) m = v[l] > m ? v[l] : m;
  return m;
}

// One channel's (or key/value group's) operands, zero-padded: rows [T][hdp] (hdp = hd rounded up
// to 16 floats) and the keys and values transposed [hdp][Tl] (Tl = T rounded up to 16), so that
// 16 keys at a time are one vector. Padding lanes stay zero, so whole vectors can be computed and
// the extra lanes ignored.
struct AttentionScratch {
  int64_t T = -1, hd = -1, hdp = 0, Tl = 0;
  std::vector<float> q, k, v, kt, vt, dy, dq, dk, dv, row;
  void size(int64_t t, int64_t h) {
    if (t == T && h == hd) return;
    T = t;
    hd = h;
    hdp = lanes(h);
    Tl = lanes(t);
    for (auto* b : {&q, &k, &v, &dy, &dq, &dk, &dv}) b->assign(T * hdp, 0.f);
    for (auto* b : {&kt, &vt}) b->assign(hdp * Tl, 0.f);
    row.assign(Tl, 0.f);
  }
};

/** This thread's scratch: a work item runs on one thread from start to end, so it is its own. */
inline AttentionScratch& attention_scratch() {
  thread_local AttentionScratch s;
  return s;
}

}  // namespace whetstone
