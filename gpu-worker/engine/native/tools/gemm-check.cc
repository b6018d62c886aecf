// The native GEMM checked outside Node: every product of a grid of shapes (few rows, row-block
// edges, K past its blocks, either operand transposed, bias and ReLU) against a double-precision
// reference, on 1 and on 2 threads; prints one JSON line: the worst error (scaled by √k), how many
// shapes give other bits on 2 threads than on 1, and a hash of every result's bits, so that two
// versions of gemm.cc can be compared bit for bit (build each, run each, compare the hashes).
//
//   S=gpu-worker/engine/native/src
//   g++ -O2 -std=c++17 -fno-math-errno -I$S $S/../tools/gemm-check.cc $S/gemm.cc $S/pool.cc -o /tmp/gemm-check -lpthread
//   /tmp/gemm-check [few | many]   (few: m ≤ 17, the default; many: several row blocks)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gemm.h"
#include "pool.h"

using namespace whetstone;

int main(int argc, char** argv) {
  const bool many = argc > 1 && std::strcmp(argv[1], "many") == 0;
  const std::vector<int64_t> rows = many ? std::vector<int64_t>{225, 300, 449} : std::vector<int64_t>{2, 3, 4, 5, 7, 8, 13, 16, 17};
  const std::vector<int64_t> dims = many ? std::vector<int64_t>{1, 17, 33, 97, 511, 513, 1100}
                                         : std::vector<int64_t>{1, 3, 16, 17, 31, 63, 64, 65, 97, 200, 257, 577, 1536};
  pool().resize(2);
  double worst = 0;
  int cases = 0, thread_dependent = 0;
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the one-thread results' bytes
  std::srand(1);
  auto uniform = [] { return std::rand() / static_cast<float>(RAND_MAX) - 0.5f; };
  for (int64_t m : rows)
    for (int64_t n : dims)
      for (int64_t k : dims)
        for (int ta = 0; ta < 2; ta++)
          for (int tb = 0; tb < 2; tb++) {
            std::vector<float> a(m * k), b(k * n), bias(n), one(m * n), two(m * n);
            for (auto& x : a) x = uniform();
            for (auto& x : b) x = uniform();
            for (auto& x : bias) x = uniform();
            const bool relu = k & 1, with_bias = n & 1;
            GemmArgs g{a.data(), b.data(), one.data(), with_bias ? bias.data() : nullptr, 1, m, n, k, ta == 1, tb == 1, 0, 0, relu};
            gemm(g, 1);
            g.c = two.data();
            gemm(g, 2);
            cases++;
            if (std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) != 0) thread_dependent++;
            const auto* bytes = reinterpret_cast<const unsigned char*>(one.data());
            for (size_t i = 0; i < one.size() * sizeof(float); i++) hash = (hash ^ bytes[i]) * 1099511628211ull;
            for (int64_t i = 0; i < m; i++)
              for (int64_t j = 0; j < n; j++) {
                double s = with_bias ? bias[j] : 0;
                for (int64_t p = 0; p < k; p++) s += double(ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
                if (relu && s < 0) s = 0;
                worst = std::max(worst, std::fabs(s - one[i * n + j]) / (1 + std::fabs(s)) / std::sqrt(double(k) + 1));
              }
          }
  std::printf("{\"shapes\":\"%s\",\"cases\":%d,\"worst_scaled_error\":%.3g,\"thread_dependent\":%d,\"hash\":\"%016llx\"}\n",
              many ? "many" : "few", cases, worst, thread_dependent, static_cast<unsigned long long>(hash));
  return worst > 1e-6 ? 1 : 0;
}
