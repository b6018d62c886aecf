// Vectorisable elementwise math shared by the kernels: no calls and no branches in the loops, so
// the compiler vectorises them for whatever target a function is compiled for.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

// A kernel compiled three times (AVX-512, AVX2+FMA, baseline) and chosen at load time by the CPU.
#if defined(__x86_64__)
#define WHETSTONE_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#else
#define WHETSTONE_CLONES
#endif

namespace whetstone {

// e^x in place, vectorisable (no calls, no branches): Cephes' single-precision polynomial on
// x − n·ln 2 (|·| ≤ ln 2 / 2), times 2^n built in the exponent bits; within 2 ulp for −87 ≤ x ≤ 88.37 (the upper clamp keeps 2^n finite), 0 below.
// libm's expf, called per element, was most of the forward's time.
inline void exp_in_place(float* x, int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    const float in = x[j];
    float v = std::min(std::max(in, -87.3f), 88.37f);
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
    // Below e^−87.3 the result is 0, not the clamp's 1e−38: products of such near-denormal
    // weights become denormals, which the CPU computes on a slow path (the decoding step's
    // attention over masked keys spent most of its time there).
    x[j] = in < -87.3f ? 0.f : p * scale;
  }
}

}  // namespace whetstone
