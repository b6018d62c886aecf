// Rows in blocks of a fixed size on the pool's threads; every row is computed alone, in one order,
// so the result does not depend on the thread count. The exponentials are vmath.h's vectorised ones.
#include "logprob.h"

#include <atomic>
#include <cmath>
#include <vector>

#include "pool.h"
#include "vec16.h"
#include "vmath.h"

namespace whetstone {

namespace {

constexpr int64_t kRows = 32;

template <typename F>
void row_blocks(int64_t n, int64_t V, int threads, F f) {
  // Below ~64 K logits one thread: waking the others costs more than they save.
  if (n * V < (1 << 16)) threads = 1;
  const int64_t count = (n + kRows - 1) / kRows;
  std::atomic<int64_t> next{0};
  pool().run(threads, [&](int) {
    for (int64_t b; (b = next.fetch_add(1)) < count;) f(b * kRows, std::min(n, (b + 1) * kRows));
  });
}

// e^{x_j − shift} for a row into e (V floats), and their sum (in 16 lanes, then in lane order).
WHETSTONE_CLONES float exp_row(const float* x, float shift, float* e, int64_t V) {
  for (int64_t j = 0; j < V; j++) e[j] = x[j] - shift;
  exp_in_place(e, V);
  v16 acc = {};
  int64_t j = 0;
  for (; j + L <= V; j += L) acc += load(e + j);
  float sum = sum_lanes(acc);
  for (; j < V; j++) sum += e[j];
  return sum;
}

// In 16 lanes (vec16.h's max_lanes says why).
WHETSTONE_CLONES float row_max(const float* x, int64_t V) {
  float m = x[0];
  int64_t j = 0;
  if (V >= L) {
    v16 mv = load(x);
    for (j = L; j + L <= V; j += L) {
      const v16 v = load(x + j);
      mv = mv > v ? mv : v;
    }
    m = max_lanes(mv);
  }
  for (; j < V; j++) m = std::max(m, x[j]);
  return m;
}

// d logits of one row: e^{x − lse} (the probabilities) times −g, plus g at the target.
WHETSTONE_CLONES void backward_row(const float* x, float lse, float g, int32_t target, float* dx, int64_t V) {
  exp_row(x, lse, dx, V);
  for (int64_t j = 0; j < V; j++) dx[j] *= -g;
  dx[target] += g;
}

std::vector<float>& row_scratch(int64_t V) {
  thread_local std::vector<float> e;
  if (static_cast<int64_t>(e.size()) < V) e.resize(V);
  return e;
}

}  // namespace

void target_logprob_forward(const float* x, const int32_t* targets, float* logp, float* lse, int64_t n, int64_t V,
                            int threads) {
  row_blocks(n, V, threads, [&](int64_t r0, int64_t r1) {
    float* e = row_scratch(V).data();
    for (int64_t r = r0; r < r1; r++) {
      const float* xr = x + r * V;
      const float m = row_max(xr, V);
      lse[r] = m + std::log(exp_row(xr, m, e, V));
      logp[r] = xr[targets[r]] - lse[r];
    }
  });
}

void target_logprob_backward(const float* g, const float* x, const float* lse, const int32_t* targets, float* dx,
                             int64_t n, int64_t V, int threads) {
  row_blocks(n, V, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) backward_row(x + r * V, lse[r], g[r], targets[r], dx + r * V, V);
  });
}

}  // namespace whetstone
