// Blocks of a fixed size go to the threads from a shared counter; each element is computed alone,
// so the result does not depend on the thread count.
#include "elementwise.h"

#include <atomic>

#include "pool.h"
#include "vmath.h"

namespace whetstone {

namespace {

constexpr float kC = 0.7978845608028654f;  // √(2/π)
constexpr float kA = 0.044715f;
// Elements per work item: large enough that a block's work outweighs taking it (~10 µs).
constexpr int64_t kBlock = 1 << 14;

WHETSTONE_CLONES void gelu_forward_block(const float* x, float* y, float* s, int64_t n) {
  // s = 1 / (1 + e^{−2u})
  for (int64_t i = 0; i < n; i++) s[i] = -2.f * kC * (x[i] + kA * x[i] * x[i] * x[i]);
  exp_in_place(s, n);
  for (int64_t i = 0; i < n; i++) {
    s[i] = 1.f / (1.f + s[i]);
    y[i] = x[i] * s[i];
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

}  // namespace

void gelu_forward(const float* x, float* y, float* s, int64_t n, int threads) {
  blocks(n, threads, [&](int64_t at, int64_t len) { gelu_forward_block(x + at, y + at, s + at, len); });
}

void gelu_backward(const float* dy, const float* x, const float* s, float* dx, int64_t n, int threads) {
  blocks(n, threads, [&](int64_t at, int64_t len) { gelu_backward_block(dy + at, x + at, s + at, dx + at, len); });
}

}  // namespace whetstone
