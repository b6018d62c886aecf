#include "choose.h"

#include <cmath>
#include <limits>
#include <vector>

namespace whetstone {

namespace {

// rng.ts's sfc32 step, word for word (uint32 arithmetic wraps as JavaScript's `>>> 0` does).
uint32_t next_uint32(uint32_t* s) {
  const uint32_t t = s[0] + s[1] + s[3];
  s[3] = s[3] + 1;
  s[0] = s[1] ^ (s[1] >> 9);
  s[1] = s[2] + (s[2] << 3);
  s[2] = (s[2] << 21) | (s[2] >> 11);
  s[2] = s[2] + t;
  return t;
}

}  // namespace

void choose_tokens(const ChooseArgs& a) {
  const int64_t V = a.V;
  const double t = a.temperature == 0 ? 1.0 : a.temperature;
  thread_local std::vector<double> e;
  e.resize(V);
  for (int64_t b = 0; b < a.B; b++) {
    if (!a.live[b]) continue;
    const float* x = a.logits + b * V;
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < V; i++) {
      const double s = x[i] / t;
      if (a.allowed[i] && s > max) max = s;
    }
    // e[i] = exp(scaled − max) serves both the normaliser and, divided by z, the probabilities.
    double z = 0;
    for (int64_t i = 0; i < V; i++) {
      e[i] = a.allowed[i] ? std::exp(x[i] / t - max) : 0;
      z += e[i];
    }
    const double log_z = std::log(z) + max;
    auto logp = [&](int64_t i) { return a.allowed[i] ? x[i] / t - log_z : -std::numeric_limits<double>::infinity(); };
    int64_t token = -1;
    if (a.temperature == 0) {
      token = 0;
      double best = logp(0);
      for (int64_t i = 1; i < V; i++) {
        const double lp = logp(i);
        if (lp > best) {
          token = i;
          best = lp;
        }
      }
    } else {
      // Every allowed token in index order, the draw scaled by the probabilities' own sum.
      double total = 0;
      int64_t last = -1;
      for (int64_t i = 0; i < V; i++) {
        if (!a.allowed[i]) continue;
        total += e[i] / z;
        last = i;
      }
      double u = next_uint32(a.rng) / 4294967296.0 * total;
      for (int64_t i = 0; i < V && token < 0; i++) {
        if (!a.allowed[i]) continue;
        u -= e[i] / z;
        if (u <= 0) token = i;
      }
      if (token < 0) token = last;
    }
    a.tokens[b] = static_cast<int32_t>(token);
    a.logprobs[b] = logp(token);
  }
}

}  // namespace whetstone
