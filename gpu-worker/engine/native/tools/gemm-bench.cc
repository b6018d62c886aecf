// The native GEMM alone, outside Node and tfjs: the figures in the engine README's "LoRA step's
// products" notes (a product's rate without dispatch, and with fresh weights each call).
//
//   S=gpu-worker/engine/native/src
//   g++ -O3 -std=c++17 -fno-math-errno -I$S $S/../tools/gemm-bench.cc $S/gemm.cc $S/pool.cc -o /tmp/gemm-bench -lpthread
//   /tmp/gemm-bench M N K THREADS [TRANS_A TRANS_B [DISTINCT_B]]
//
// C[M, N] = op(A)·op(B) with op(A) [M, K] and op(B) [K, N]; TRANS_A / TRANS_B 0 or 1. DISTINCT_B > 1
// cycles through that many B matrices, so each call reads its weights from memory as a training
// step does (40 of [576, 1536] are 140 MiB). Prints one JSON line: the best of 5 timings of the
// mean over a pass, in GFLOP/s and µs.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gemm.h"
#include "pool.h"

using namespace whetstone;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: gemm-bench M N K THREADS [TRANS_A TRANS_B [DISTINCT_B]]\n");
    return 2;
  }
  const int64_t m = std::atoll(argv[1]), n = std::atoll(argv[2]), k = std::atoll(argv[3]);
  const int threads = std::atoi(argv[4]);
  const bool ta = argc > 5 && argv[5][0] == '1', tb = argc > 6 && argv[6][0] == '1';
  const int distinct = argc > 7 ? std::max(1, std::atoi(argv[7])) : 1;
  std::vector<float> a(m * k), c(m * n);
  std::vector<std::vector<float>> bs(distinct, std::vector<float>(k * n));
  for (auto& x : a) x = std::rand() / static_cast<float>(RAND_MAX);
  for (auto& b : bs)
    for (auto& x : b) x = std::rand() / static_cast<float>(RAND_MAX);
  pool().resize(threads);
  auto product = [&](int i) {
    const GemmArgs g{a.data(), bs[i].data(), c.data(), nullptr, 1, m, n, k, ta, tb, 0, 0, false};
    gemm(g, threads);
  };
  for (int i = 0; i < distinct; i++) product(i);
  // A pass is `distinct` products, or 200 of the one B (short products need many for a timing).
  const int calls = distinct > 1 ? distinct : 200;
  double best = 1e9;
  for (int rep = 0; rep < 5; rep++) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; i++) product(i % distinct);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls;
    if (s < best) best = s;
  }
  std::printf("{\"m\":%lld,\"n\":%lld,\"k\":%lld,\"threads\":%d,\"transA\":%d,\"transB\":%d,\"distinctB\":%d,\"gflops\":%.1f,\"us\":%.1f}\n",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), threads, ta, tb, distinct,
              2.0 * m * n * k / best / 1e9, best * 1e6);
}
