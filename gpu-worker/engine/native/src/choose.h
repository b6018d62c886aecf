// Choosing the next token of every row from a decoding step's logits, where the sampler's
// JavaScript (sampler.ts, chooseToken) spent a sixth of a small model's step: the same choice by
// the same arithmetic (double precision, the same sums in the same order, the sampler's sfc32
// stream), reading the logits where they lie on the wasm heap instead of a copy out of it.
#pragma once
#include <cstdint>

namespace whetstone {

struct ChooseArgs {
  const float* logits;     // [B, V]
  int64_t B, V;
  double temperature;      // 0: greedy (the likeliest allowed token, no draw)
  const uint8_t* allowed;  // [V]: 0 for the tokens never sampled (padding, BOS)
  const uint8_t* live;     // [B]: 1 for the rows that choose (a finished row draws nothing)
  uint32_t* rng;           // the sfc32 state (4 words), advanced by one draw per live row
  int32_t* tokens;         // [B] out (live rows)
  double* logprobs;        // [B] out: the chosen token's log-probability at the temperature
};

// Rows in order, each as chooseToken with topK 0 and topP 1 (no constraint).
void choose_tokens(const ChooseArgs& a);

}  // namespace whetstone
