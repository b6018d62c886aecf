// Work items are fixed blocks of one tensor each, taken from a shared counter; Adam's elements are
// independent and the sums of squares are added block by block in the items' order afterwards.
#include "optim.h"

#include <atomic>
#include <cmath>

#include "pool.h"
#include "vmath.h"

namespace whetstone {

namespace {

// Floats per work item, and the least work worth waking the other threads for (waking one costs
// about as much as a pass over 64 K floats).
constexpr int64_t kBlock = 1 << 14;
constexpr int64_t kThreaded = 1 << 18;

struct Item {
  int64_t tensor, at, len;
};

template <typename Sizes>
std::vector<Item> items_of(const Sizes& sizes, int64_t* total) {
  std::vector<Item> items;
  *total = 0;
  for (int64_t t = 0; t < static_cast<int64_t>(sizes.size()); t++) {
    for (int64_t at = 0; at < sizes[t]; at += kBlock) items.push_back({t, at, std::min(kBlock, sizes[t] - at)});
    *total += sizes[t];
  }
  return items;
}

template <typename F>
void run_items(const std::vector<Item>& items, int64_t total, int threads, F f) {
  if (total < kThreaded) threads = 1;
  std::atomic<int64_t> next{0};
  const int64_t count = static_cast<int64_t>(items.size());
  pool().run(threads, [&](int) {
    for (int64_t i; (i = next.fetch_add(1)) < count;) f(i, items[i]);
  });
}

// Adam's arithmetic is the wasm path's to the bit (wasm/adam.wat in float32 for the first n − n mod 4
// elements of a tensor, optim.ts's JavaScript in double for the rest), so that a run that switches
// paths (a parameter sharing its memory takes the wasm one for a step) changes no bit, and a resumed
// run repeats the straight one exactly. Hence no fused multiply-adds here (the wasm code has none).
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

// Elements [0, n) of a block; those from `tail` on are a tensor's last n mod 4, done in double.
WHETSTONE_CLONES void adam_block(float* p, const float* g, float* m, float* v, int64_t n, int64_t tail,
                                 const AdamHyper& h, double decay) {
  // The constants as adam.wat makes them from its float32 parameters.
  const float sc = static_cast<float>(h.scale), b1 = static_cast<float>(h.beta1), b2 = static_cast<float>(h.beta2);
  const float c1 = 1.f - b1, c2 = 1.f - b2;
  const float lr_bc1 = static_cast<float>(h.lr) / static_cast<float>(h.bc1), inv_bc2 = 1.f / static_cast<float>(h.bc2);
  const float ep = static_cast<float>(h.eps), dec = static_cast<float>(decay);
  for (int64_t i = 0; i < tail; i++) {
    const float gv = g[i] * sc;
    const float mv = b1 * m[i] + c1 * gv;
    const float vv = b2 * v[i] + c2 * (gv * gv);
    const float pv = p[i];
    m[i] = mv;
    v[i] = vv;
    p[i] = (pv - (lr_bc1 * mv) / (std::sqrt(vv * inv_bc2) + ep)) - dec * pv;
  }
  for (int64_t i = tail; i < n; i++) {
    const double gi = g[i] * h.scale;
    const double mi = h.beta1 * m[i] + (1 - h.beta1) * gi;
    const double vi = h.beta2 * v[i] + (1 - h.beta2) * gi * gi;
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
    p[i] = static_cast<float>(p[i] - (h.lr * (mi / h.bc1)) / (std::sqrt(vi / h.bc2) + h.eps) - decay * p[i]);
  }
}

#pragma GCC pop_options

typedef float v8f __attribute__((vector_size(32), aligned(4)));
typedef double v8d __attribute__((vector_size(64)));

// Eight double lanes (a scalar double loop would be one long dependency chain).
WHETSTONE_CLONES double sum_squares_block(const float* x, int64_t n) {
  v8d acc = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const v8d d = __builtin_convertvector(*reinterpret_cast<const v8f*>(x + i), v8d);
    acc += d * d;
  }
  double s = 0;
  for (int j = 0; j < 8; j++) s += acc[j];
  for (; i < n; i++) s += static_cast<double>(x[i]) * x[i];
  return s;
}

}  // namespace

void adam_step(const std::vector<AdamTensor>& tensors, const AdamHyper& h, int threads) {
  std::vector<int64_t> sizes;
  for (const auto& t : tensors) sizes.push_back(t.n);
  int64_t total;
  const auto items = items_of(sizes, &total);
  run_items(items, total, threads, [&](int64_t, const Item& it) {
    const AdamTensor& t = tensors[it.tensor];
    const int64_t tail = std::min(it.len, std::max<int64_t>(0, (t.n & ~int64_t{3}) - it.at));
    adam_block(t.p + it.at, t.g + it.at, t.m + it.at, t.v + it.at, it.len, tail, h, t.decay);
  });
}

double sum_squares(const std::vector<std::pair<const float*, int64_t>>& arrays, int threads) {
  std::vector<int64_t> sizes;
  for (const auto& a : arrays) sizes.push_back(a.second);
  int64_t total;
  const auto items = items_of(sizes, &total);
  std::vector<double> partial(items.size());
  run_items(items, total, threads, [&](int64_t i, const Item& it) {
    partial[i] = sum_squares_block(arrays[it.tensor].first + it.at, it.len);
  });
  double sum = 0;
  for (double p : partial) sum += p;
  return sum;
}

}  // namespace whetstone
