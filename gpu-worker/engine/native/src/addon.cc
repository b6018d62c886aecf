// The Node binding of the native kernels (node_api.h, the C API: ABI-stable across Node versions).
// Kernels take Float32Array views (of the wasm backend's heap, in the engine) and work in place on
// their memory; every length is checked against the shapes first, so a wrong call throws instead
// of writing outside the views.
#include <node_api.h>

#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "attention.h"
#include "choose.h"
#include "decode.h"
#include "elementwise.h"
#include "gemm.h"
#include "logprob.h"
#include "lora.h"
#include "optim.h"
#include "pool.h"
#include "rotary_attention.h"

namespace whetstone {
namespace {

struct Failure {
  std::string message;
};

void check(napi_env env, napi_status status, const char* what) {
  if (status != napi_ok) throw Failure{std::string("whetstone_native: ") + what};
}

// A typed array argument's data and length, of the one kind a kernel takes (`what` names it in
// the error); null (with length 0) when `optional` and the argument is null or undefined.
template <typename T>
T* typed(napi_env env, napi_value v, const char* name, size_t* length, napi_typedarray_type want, const char* what,
         bool optional = false) {
  napi_valuetype type;
  check(env, napi_typeof(env, v, &type), "typeof");
  if (optional && (type == napi_null || type == napi_undefined)) {
    *length = 0;
    return nullptr;
  }
  bool is_typed = false;
  check(env, napi_is_typedarray(env, v, &is_typed), "is_typedarray");
  if (!is_typed) throw Failure{std::string(name) + " must be " + what};
  napi_typedarray_type kind;
  void* data;
  check(env, napi_get_typedarray_info(env, v, &kind, length, &data, nullptr, nullptr), "typedarray_info");
  if (kind != want) throw Failure{std::string(name) + " must be " + what};
  return static_cast<T*>(data);
}

float* f32(napi_env env, napi_value v, const char* name, size_t* length, bool optional = false) {
  return typed<float>(env, v, name, length, napi_float32_array, "a Float32Array", optional);
}

int64_t integer(napi_env env, napi_value v, const char* name) {
  int64_t out;
  if (napi_get_value_int64(env, v, &out) != napi_ok || out < 0) throw Failure{std::string(name) + " must be a non-negative integer"};
  return out;
}

bool boolean(napi_env env, napi_value v, const char* name) {
  bool out;
  if (napi_get_value_bool(env, v, &out) != napi_ok) throw Failure{std::string(name) + " must be a boolean"};
  return out;
}

std::vector<napi_value> args(napi_env env, napi_callback_info info, size_t expected) {
  std::vector<napi_value> argv(expected);
  size_t argc = expected;
  check(env, napi_get_cb_info(env, info, &argc, argv.data(), nullptr, nullptr), "cb_info");
  if (argc != expected) throw Failure{"expected " + std::to_string(expected) + " arguments"};
  return argv;
}

// The kernels share one thread pool and one set of packing buffers per process; a process whose
// JavaScript runs on several threads (worker_threads) takes turns here.
std::mutex calls;

template <typename F>
napi_value guarded(napi_env env, F f) {
  try {
    std::lock_guard<std::mutex> lock(calls);
    return f();
  } catch (const Failure& failure) {
    napi_throw_error(env, nullptr, failure.message.c_str());
    return nullptr;
  } catch (const std::exception& err) {
    napi_throw_error(env, nullptr, err.what());
    return nullptr;
  }
}

// gemm(a, b, c, bias | null, batch, m, n, k, transA, transB, aStride, bStride, relu)
napi_value Gemm(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 13);
    GemmArgs g{};
    size_t a_len, b_len, c_len, bias_len;
    g.a = f32(env, argv[0], "a", &a_len);
    g.b = f32(env, argv[1], "b", &b_len);
    g.c = f32(env, argv[2], "c", &c_len);
    g.bias = f32(env, argv[3], "bias", &bias_len, true);
    g.batch = integer(env, argv[4], "batch");
    g.m = integer(env, argv[5], "m");
    g.n = integer(env, argv[6], "n");
    g.k = integer(env, argv[7], "k");
    g.trans_a = boolean(env, argv[8], "transA");
    g.trans_b = boolean(env, argv[9], "transB");
    g.a_stride = integer(env, argv[10], "aStride");
    g.b_stride = integer(env, argv[11], "bStride");
    g.relu = boolean(env, argv[12], "relu");
    if (g.batch == 0 || g.m == 0 || g.n == 0) return nullptr;
    const auto last = static_cast<uint64_t>(g.batch - 1);
    if (last * g.a_stride + g.m * g.k > a_len) throw Failure{"a is shorter than its shape"};
    if (last * g.b_stride + g.k * g.n > b_len) throw Failure{"b is shorter than its shape"};
    if (static_cast<uint64_t>(g.batch * g.m * g.n) > c_len) throw Failure{"c is shorter than its shape"};
    if (g.bias && static_cast<int64_t>(bias_len) < g.n) throw Failure{"bias is shorter than n"};
    gemm(g, pool().size());
    return nullptr;
  });
}

float number(napi_env env, napi_value v, const char* name) {
  double out;
  if (napi_get_value_double(env, v, &out) != napi_ok) throw Failure{std::string(name) + " must be a number"};
  return static_cast<float>(out);
}

// The shapes shared by both attention calls: B, T, H, hd, Tp, scale at argv[first…].
AttentionDims attention_dims(napi_env env, const std::vector<napi_value>& argv, size_t first) {
  AttentionDims d{};
  d.B = integer(env, argv[first], "B");
  d.T = integer(env, argv[first + 1], "T");
  d.H = integer(env, argv[first + 2], "H");
  d.hd = integer(env, argv[first + 3], "hd");
  d.Tp = integer(env, argv[first + 4], "Tp");
  d.scale = number(env, argv[first + 5], "scale");
  if (d.Tp < d.T) throw Failure{"Tp must be at least T"};
  return d;
}

void need(size_t length, int64_t n, const char* name) {
  if (static_cast<int64_t>(length) < n) throw Failure{std::string(name) + " is shorter than its shape"};
}

// attentionForward(qkv, P, y, B, T, H, hd, Tp, scale)
napi_value AttentionForward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 9);
    size_t qkv_len, p_len, y_len;
    const float* qkv = f32(env, argv[0], "qkv", &qkv_len);
    float* P = f32(env, argv[1], "P", &p_len);
    float* y = f32(env, argv[2], "y", &y_len);
    const AttentionDims d = attention_dims(env, argv, 3);
    need(qkv_len, d.B * d.T * 3 * d.H * d.hd, "qkv");
    need(p_len, d.B * d.H * d.T * d.Tp, "P");
    need(y_len, d.B * d.T * d.H * d.hd, "y");
    if (d.B > 0 && d.T > 0 && d.H > 0) attention_forward(qkv, P, y, d, pool().size());
    return nullptr;
  });
}

// attentionBackward(qkv, P, dy, dqkv, B, T, H, hd, Tp, scale)
napi_value AttentionBackward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 10);
    size_t qkv_len, p_len, dy_len, dqkv_len;
    const float* qkv = f32(env, argv[0], "qkv", &qkv_len);
    const float* P = f32(env, argv[1], "P", &p_len);
    const float* dy = f32(env, argv[2], "dy", &dy_len);
    float* dqkv = f32(env, argv[3], "dqkv", &dqkv_len);
    const AttentionDims d = attention_dims(env, argv, 4);
    need(qkv_len, d.B * d.T * 3 * d.H * d.hd, "qkv");
    need(p_len, d.B * d.H * d.T * d.Tp, "P");
    need(dy_len, d.B * d.T * d.H * d.hd, "dy");
    need(dqkv_len, d.B * d.T * 3 * d.H * d.hd, "dqkv");
    if (d.B > 0 && d.T > 0 && d.H > 0) attention_backward(qkv, P, dy, dqkv, d, pool().size());
    return nullptr;
  });
}

// The shapes shared by both rotary attention calls: B, T, H, Hkv, hd, Tp, R, scale at argv[first…].
RotaryAttentionDims rotary_dims(napi_env env, const std::vector<napi_value>& argv, size_t first) {
  RotaryAttentionDims d{};
  d.B = integer(env, argv[first], "B");
  d.T = integer(env, argv[first + 1], "T");
  d.H = integer(env, argv[first + 2], "H");
  d.Hkv = integer(env, argv[first + 3], "Hkv");
  d.hd = integer(env, argv[first + 4], "hd");
  d.Tp = integer(env, argv[first + 5], "Tp");
  d.R = integer(env, argv[first + 6], "R");
  d.scale = number(env, argv[first + 7], "scale");
  if (d.Tp < d.T) throw Failure{"Tp must be at least T"};
  if (d.Hkv == 0 || d.H % d.Hkv != 0) throw Failure{"H must be a multiple of Hkv"};
  if (d.hd % 2 != 0) throw Failure{"hd must be even (rotary pairs)"};
  if (d.R != 1 && d.R != d.B) throw Failure{"R must be 1 or B"};
  return d;
}

// The lengths every rotary attention call checks: q, k, v and the two tables.
void need_rotary(const RotaryAttentionDims& d, size_t q, size_t k, size_t v, size_t cos, size_t sin) {
  need(q, d.B * d.T * d.H * d.hd, "q");
  need(k, d.B * d.T * d.Hkv * d.hd, "k");
  need(v, d.B * d.T * d.Hkv * d.hd, "v");
  need(cos, d.R * d.T * d.hd / 2, "cos");
  need(sin, d.R * d.T * d.hd / 2, "sin");
}

// rotaryAttentionForward(q, k, v, cos, sin, P, y, B, T, H, Hkv, hd, Tp, R, scale)
napi_value RotaryAttentionForward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 15);
    size_t q_len, k_len, v_len, cos_len, sin_len, p_len, y_len;
    const float* q = f32(env, argv[0], "q", &q_len);
    const float* k = f32(env, argv[1], "k", &k_len);
    const float* v = f32(env, argv[2], "v", &v_len);
    const float* cos = f32(env, argv[3], "cos", &cos_len);
    const float* sin = f32(env, argv[4], "sin", &sin_len);
    float* P = f32(env, argv[5], "P", &p_len);
    float* y = f32(env, argv[6], "y", &y_len);
    const RotaryAttentionDims d = rotary_dims(env, argv, 7);
    need_rotary(d, q_len, k_len, v_len, cos_len, sin_len);
    need(p_len, d.B * d.H * d.T * d.Tp, "P");
    need(y_len, d.B * d.T * d.H * d.hd, "y");
    if (d.B > 0 && d.T > 0 && d.H > 0) rotary_attention_forward(q, k, v, cos, sin, P, y, d, pool().size());
    return nullptr;
  });
}

// rotaryAttentionBackward(q, k, v, cos, sin, P, dy, dq, dk, dv, B, T, H, Hkv, hd, Tp, R, scale)
napi_value RotaryAttentionBackward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 18);
    size_t q_len, k_len, v_len, cos_len, sin_len, p_len, dy_len, dq_len, dk_len, dv_len;
    const float* q = f32(env, argv[0], "q", &q_len);
    const float* k = f32(env, argv[1], "k", &k_len);
    const float* v = f32(env, argv[2], "v", &v_len);
    const float* cos = f32(env, argv[3], "cos", &cos_len);
    const float* sin = f32(env, argv[4], "sin", &sin_len);
    const float* P = f32(env, argv[5], "P", &p_len);
    const float* dy = f32(env, argv[6], "dy", &dy_len);
    float* dq = f32(env, argv[7], "dq", &dq_len);
    float* dk = f32(env, argv[8], "dk", &dk_len);
    float* dv = f32(env, argv[9], "dv", &dv_len);
    const RotaryAttentionDims d = rotary_dims(env, argv, 10);
    need_rotary(d, q_len, k_len, v_len, cos_len, sin_len);
    need(p_len, d.B * d.H * d.T * d.Tp, "P");
    need(dy_len, d.B * d.T * d.H * d.hd, "dy");
    need(dq_len, d.B * d.T * d.H * d.hd, "dq");
    need(dk_len, d.B * d.T * d.Hkv * d.hd, "dk");
    need(dv_len, d.B * d.T * d.Hkv * d.hd, "dv");
    if (d.B > 0 && d.T > 0 && d.H > 0) rotary_attention_backward(q, k, v, cos, sin, P, dy, dq, dk, dv, d, pool().size());
    return nullptr;
  });
}

// rmsNormForward(x, gain, y, rstd, n, d, eps)
napi_value RmsNormForward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 7);
    size_t x_len, g_len, y_len, r_len;
    const float* x = f32(env, argv[0], "x", &x_len);
    const float* gain = f32(env, argv[1], "gain", &g_len);
    float* y = f32(env, argv[2], "y", &y_len);
    float* rstd = f32(env, argv[3], "rstd", &r_len);
    const int64_t n = integer(env, argv[4], "n"), d = integer(env, argv[5], "d");
    const float eps = number(env, argv[6], "eps");
    need(x_len, n * d, "x");
    need(g_len, d, "gain");
    need(y_len, n * d, "y");
    need(r_len, n, "rstd");
    rms_norm_forward(x, gain, y, rstd, n, d, eps, pool().size());
    return nullptr;
  });
}

// rmsNormBackward(dy, x, rstd, gain, dx, dgain, n, d)
napi_value RmsNormBackward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 8);
    size_t dy_len, x_len, r_len, g_len, dx_len, dg_len;
    const float* dy = f32(env, argv[0], "dy", &dy_len);
    const float* x = f32(env, argv[1], "x", &x_len);
    const float* rstd = f32(env, argv[2], "rstd", &r_len);
    const float* gain = f32(env, argv[3], "gain", &g_len);
    float* dx = f32(env, argv[4], "dx", &dx_len);
    float* dgain = f32(env, argv[5], "dgain", &dg_len);
    const int64_t n = integer(env, argv[6], "n"), d = integer(env, argv[7], "d");
    need(dy_len, n * d, "dy");
    need(x_len, n * d, "x");
    need(r_len, n, "rstd");
    need(g_len, d, "gain");
    need(dx_len, n * d, "dx");
    need(dg_len, d, "dgain");
    rms_norm_backward(dy, x, rstd, gain, dx, dgain, n, d, pool().size());
    return nullptr;
  });
}

// swigluForward(gate, up, z)
napi_value SwigluForward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 3);
    size_t n, up_len, z_len;
    const float* gate = f32(env, argv[0], "gate", &n);
    const float* up = f32(env, argv[1], "up", &up_len);
    float* z = f32(env, argv[2], "z", &z_len);
    need(up_len, static_cast<int64_t>(n), "up");
    need(z_len, static_cast<int64_t>(n), "z");
    swiglu_forward(gate, up, z, static_cast<int64_t>(n), pool().size());
    return nullptr;
  });
}

// swigluBackward(dz, gate, up, dgate, dup)
napi_value SwigluBackward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 5);
    size_t n, dz_len, up_len, dg_len, du_len;
    const float* dz = f32(env, argv[0], "dz", &dz_len);
    const float* gate = f32(env, argv[1], "gate", &n);
    const float* up = f32(env, argv[2], "up", &up_len);
    float* dgate = f32(env, argv[3], "dgate", &dg_len);
    float* dup = f32(env, argv[4], "dup", &du_len);
    for (auto [len, name] : {std::pair<size_t, const char*>{dz_len, "dz"}, {up_len, "up"}, {dg_len, "dgate"}, {du_len, "dup"}})
      need(len, static_cast<int64_t>(n), name);
    swiglu_backward(dz, gate, up, dgate, dup, static_cast<int64_t>(n), pool().size());
    return nullptr;
  });
}

// geluForward(x, y, s): y = GELU(x), s = σ(2u) for the backward
napi_value GeluForward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 3);
    size_t n, y_len, s_len;
    const float* x = f32(env, argv[0], "x", &n);
    float* y = f32(env, argv[1], "y", &y_len);
    float* s = f32(env, argv[2], "s", &s_len);
    need(y_len, static_cast<int64_t>(n), "y");
    need(s_len, static_cast<int64_t>(n), "s");
    gelu_forward(x, y, s, static_cast<int64_t>(n), pool().size());
    return nullptr;
  });
}

// geluBackward(dy, x, s, dx)
napi_value GeluBackward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 4);
    size_t n, dy_len, s_len, dx_len;
    const float* dy = f32(env, argv[0], "dy", &dy_len);
    const float* x = f32(env, argv[1], "x", &n);
    const float* s = f32(env, argv[2], "s", &s_len);
    float* dx = f32(env, argv[3], "dx", &dx_len);
    need(dy_len, static_cast<int64_t>(n), "dy");
    need(s_len, static_cast<int64_t>(n), "s");
    need(dx_len, static_cast<int64_t>(n), "dx");
    gelu_backward(dy, x, s, dx, static_cast<int64_t>(n), pool().size());
    return nullptr;
  });
}

// The Float32Array elements of a JavaScript array, each checked to hold at least sizes[i] floats.
std::vector<float*> f32_list(napi_env env, napi_value list, const char* name, const std::vector<int64_t>& sizes) {
  uint32_t n = 0;
  if (napi_get_array_length(env, list, &n) != napi_ok || n != sizes.size()) {
    throw Failure{std::string(name) + " must be an array of " + std::to_string(sizes.size()) + " Float32Arrays"};
  }
  std::vector<float*> out(n);
  for (uint32_t i = 0; i < n; i++) {
    napi_value item;
    check(env, napi_get_element(env, list, i, &item), "element");
    size_t len;
    out[i] = f32(env, item, name, &len);
    need(len, sizes[i], (std::string(name) + "[" + std::to_string(i) + "]").c_str());
  }
  return out;
}

const int32_t* i32(napi_env env, napi_value v, const char* name, size_t* length) {
  return typed<int32_t>(env, v, name, length, napi_int32_array, "an Int32Array");
}

// decodeStep(tokens, positions, keyMask, weights, caches, logits, [B, d, H, V, hid, past, ctx, capacity, layers], eps)
//   weights: wte, wpe, lnf.g, lnf.b, head [d, V], then per layer ln1.g, ln1.b, qkv.w, qkv.b,
//   proj.w, proj.b, ln2.g, ln2.b, fc.w, fc.b, out.w, out.b; caches: keys, values per layer.
napi_value DecodeStep(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 8);
    int64_t dims[9];
    {
      uint32_t n = 0;
      if (napi_get_array_length(env, argv[6], &n) != napi_ok || n != 9) throw Failure{"dims must be [B, d, H, V, hid, past, ctx, capacity, layers]"};
      for (uint32_t i = 0; i < 9; i++) {
        napi_value item;
        check(env, napi_get_element(env, argv[6], i, &item), "element");
        dims[i] = integer(env, item, "dims");
      }
    }
    DecodeArgs a{};
    a.B = dims[0];
    a.d = dims[1];
    a.H = dims[2];
    a.V = dims[3];
    a.hid = dims[4];
    a.past = dims[5];
    const int64_t ctx = dims[6], capacity = dims[7], layers = dims[8];
    if (a.H < 1 || a.d % a.H != 0) throw Failure{"d must be a multiple of H"};
    if (a.past >= capacity) throw Failure{"the cache has no room for another position"};
    a.eps = number(env, argv[7], "eps");
    size_t n_tokens, n_positions, n_mask, n_logits;
    a.tokens = i32(env, argv[0], "tokens", &n_tokens);
    a.positions = i32(env, argv[1], "positions", &n_positions);
    a.key_mask = f32(env, argv[2], "keyMask", &n_mask);
    need(n_tokens, a.B, "tokens");
    need(n_positions, a.B, "positions");
    need(n_mask, a.B * (a.past + 1), "keyMask");
    for (int64_t b = 0; b < a.B; b++) {
      if (a.tokens[b] < 0 || a.tokens[b] >= a.V) throw Failure{"a token is outside the vocabulary"};
      if (a.positions[b] < 0 || a.positions[b] >= ctx) throw Failure{"a position is outside the context"};
    }
    const int64_t d = a.d, hid = a.hid;
    std::vector<int64_t> sizes = {a.V * d, ctx * d, d, d, d * a.V};
    for (int64_t l = 0; l < layers; l++) {
      for (int64_t s : {d, d, d * 3 * d, 3 * d, d * d, d, d, d, d * hid, hid, hid * d, d}) sizes.push_back(s);
    }
    const auto w = f32_list(env, argv[3], "weights", sizes);
    const auto caches = f32_list(env, argv[4], "caches", std::vector<int64_t>(2 * layers, capacity * a.B * d));
    a.logits = f32(env, argv[5], "logits", &n_logits);
    need(n_logits, a.B * a.V, "logits");
    a.wte = w[0];
    a.wpe = w[1];
    a.lnf_g = w[2];
    a.lnf_b = w[3];
    a.head = w[4];
    for (int64_t l = 0; l < layers; l++) {
      float* const* p = w.data() + 5 + 12 * l;
      a.layers.push_back({p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], caches[2 * l], caches[2 * l + 1]});
    }
    decode_step(a);
    return nullptr;
  });
}

// The Float32Arrays of a JavaScript array, of any lengths.
std::vector<std::pair<float*, size_t>> f32_arrays(napi_env env, napi_value list, const char* name) {
  uint32_t n = 0;
  if (napi_get_array_length(env, list, &n) != napi_ok) throw Failure{std::string(name) + " must be an array of Float32Arrays"};
  std::vector<std::pair<float*, size_t>> out(n);
  for (uint32_t i = 0; i < n; i++) {
    napi_value item;
    check(env, napi_get_element(env, list, i, &item), "element");
    out[i].first = f32(env, item, name, &out[i].second);
  }
  return out;
}

const double* f64(napi_env env, napi_value v, const char* name, size_t* length) {
  return typed<double>(env, v, name, length, napi_float64_array, "a Float64Array");
}

// adam(params, grads, m, v, decays, [scale, lr, beta1, beta2, bc1, bc2, eps]): params, m and v
// updated in place; decays (a Float64Array, one per tensor) holds each one's lr · weightDecay or 0,
// the last argument (a Float64Array) the step's hyperparameters.
napi_value Adam(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 6);
    const auto p = f32_arrays(env, argv[0], "params"), g = f32_arrays(env, argv[1], "grads");
    const auto m = f32_arrays(env, argv[2], "m"), v = f32_arrays(env, argv[3], "v");
    size_t n_decay, n_hyper;
    const double* decay = f64(env, argv[4], "decays", &n_decay);
    const double* hyper = f64(env, argv[5], "hyper", &n_hyper);
    if (g.size() != p.size() || m.size() != p.size() || v.size() != p.size() || n_decay != p.size()) {
      throw Failure{"params, grads, m, v and decays must have one entry per tensor"};
    }
    need(n_hyper, 7, "hyper");
    std::vector<AdamTensor> tensors;
    for (size_t i = 0; i < p.size(); i++) {
      if (g[i].second != p[i].second || m[i].second != p[i].second || v[i].second != p[i].second) {
        throw Failure{"tensor " + std::to_string(i) + ": params, grads, m and v differ in length"};
      }
      tensors.push_back({p[i].first, g[i].first, m[i].first, v[i].first, static_cast<int64_t>(p[i].second), decay[i]});
    }
    adam_step(tensors, {hyper[0], hyper[1], hyper[2], hyper[3], hyper[4], hyper[5], hyper[6]}, pool().size());
    return nullptr;
  });
}

// sumSquares(arrays) → Σ x² over all of them (double precision)
napi_value SumSquares(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 1);
    std::vector<std::pair<const float*, int64_t>> arrays;
    for (const auto& [data, n] : f32_arrays(env, argv[0], "arrays")) arrays.emplace_back(data, static_cast<int64_t>(n));
    napi_value out;
    check(env, napi_create_double(env, sum_squares(arrays, pool().size()), &out), "double");
    return out;
  });
}

// The targets of targetLogProb*: n of them, each a column of the V logits.
const int32_t* targets_of(napi_env env, napi_value v, int64_t n, int64_t V) {
  size_t len;
  const int32_t* t = i32(env, v, "targets", &len);
  need(len, n, "targets");
  for (int64_t r = 0; r < n; r++) {
    if (t[r] < 0 || t[r] >= V) throw Failure{"a target is outside the vocabulary"};
  }
  return t;
}

// targetLogProbForward(x, targets, logp, lse, n, V)
napi_value TargetLogProbForward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 6);
    size_t xl, pl, ll;
    const float* x = f32(env, argv[0], "x", &xl);
    float* logp = f32(env, argv[2], "logp", &pl);
    float* lse = f32(env, argv[3], "lse", &ll);
    const int64_t n = integer(env, argv[4], "n"), V = integer(env, argv[5], "V");
    if (V < 1) throw Failure{"V must be at least 1"};
    const int32_t* targets = targets_of(env, argv[1], n, V);
    need(xl, n * V, "x");
    need(pl, n, "logp");
    need(ll, n, "lse");
    target_logprob_forward(x, targets, logp, lse, n, V, pool().size());
    return nullptr;
  });
}

// targetLogProbBackward(g, x, lse, targets, dx, n, V)
napi_value TargetLogProbBackward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 7);
    size_t gl, xl, ll, dl;
    const float* g = f32(env, argv[0], "g", &gl);
    const float* x = f32(env, argv[1], "x", &xl);
    const float* lse = f32(env, argv[2], "lse", &ll);
    float* dx = f32(env, argv[4], "dx", &dl);
    const int64_t n = integer(env, argv[5], "n"), V = integer(env, argv[6], "V");
    if (V < 1) throw Failure{"V must be at least 1"};
    const int32_t* targets = targets_of(env, argv[3], n, V);
    need(gl, n, "g");
    need(xl, n * V, "x");
    need(ll, n, "lse");
    need(dl, n * V, "dx");
    target_logprob_backward(g, x, lse, targets, dx, n, V, pool().size());
    return nullptr;
  });
}

// columnSums(x, out, n, m): out[j] = Σ_i x[i, j]
napi_value ColumnSums(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 4);
    size_t xl, ol;
    const float* x = f32(env, argv[0], "x", &xl);
    float* out = f32(env, argv[1], "out", &ol);
    const int64_t n = integer(env, argv[2], "n"), m = integer(env, argv[3], "m");
    need(xl, n * m, "x");
    need(ol, m, "out");
    column_sums(x, out, n, m);
    return nullptr;
  });
}

// layerNormForward(x, gain, bias, y, stats, n, d, eps)
napi_value LayerNormForward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 8);
    size_t xl, gl, bl, yl, sl;
    const float* x = f32(env, argv[0], "x", &xl);
    const float* g = f32(env, argv[1], "gain", &gl);
    const float* b = f32(env, argv[2], "bias", &bl);
    float* y = f32(env, argv[3], "y", &yl);
    float* stats = f32(env, argv[4], "stats", &sl);
    const int64_t n = integer(env, argv[5], "n"), d = integer(env, argv[6], "d");
    const float eps = number(env, argv[7], "eps");
    need(xl, n * d, "x");
    need(yl, n * d, "y");
    need(gl, d, "gain");
    need(bl, d, "bias");
    need(sl, 2 * n, "stats");
    if (d > 0) layer_norm_forward(x, g, b, y, stats, n, d, eps, pool().size());
    return nullptr;
  });
}

// layerNormBackward(dy, x, stats, gain, dx, dgain, dbias, n, d)
napi_value LayerNormBackward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 9);
    size_t dyl, xl, sl, gl, dxl, dgl, dbl;
    const float* dy = f32(env, argv[0], "dy", &dyl);
    const float* x = f32(env, argv[1], "x", &xl);
    const float* stats = f32(env, argv[2], "stats", &sl);
    const float* g = f32(env, argv[3], "gain", &gl);
    float* dx = f32(env, argv[4], "dx", &dxl);
    float* dg = f32(env, argv[5], "dgain", &dgl);
    float* db = f32(env, argv[6], "dbias", &dbl);
    const int64_t n = integer(env, argv[7], "n"), d = integer(env, argv[8], "d");
    need(dyl, n * d, "dy");
    need(xl, n * d, "x");
    need(dxl, n * d, "dx");
    need(sl, 2 * n, "stats");
    need(gl, d, "gain");
    need(dgl, d, "dgain");
    need(dbl, d, "dbias");
    layer_norm_backward(dy, x, stats, g, dx, dg, db, n, d, pool().size());
    return nullptr;
  });
}

// info() → { kernel, threads, features }
napi_value Info(napi_env env, napi_callback_info) {
  return guarded(env, [&]() -> napi_value {
    napi_value out, kernel, threads, features;
    check(env, napi_create_object(env, &out), "object");
    check(env, napi_create_string_utf8(env, gemm_kernel_name(), NAPI_AUTO_LENGTH, &kernel), "string");
    check(env, napi_create_int32(env, pool().size(), &threads), "int");
    check(env, napi_create_array(env, &features), "array");
    uint32_t i = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    const char* names[] = {"sse4.2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl"};
    const bool has[] = {
        __builtin_cpu_supports("sse4.2") != 0, __builtin_cpu_supports("avx") != 0,
        __builtin_cpu_supports("avx2") != 0,   __builtin_cpu_supports("fma") != 0,
        __builtin_cpu_supports("avx512f") != 0, __builtin_cpu_supports("avx512bw") != 0,
        __builtin_cpu_supports("avx512vl") != 0};
    for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
      if (!has[f]) continue;
      napi_value name;
      check(env, napi_create_string_utf8(env, names[f], NAPI_AUTO_LENGTH, &name), "string");
      check(env, napi_set_element(env, features, i++, name), "element");
    }
#endif
    check(env, napi_set_named_property(env, out, "kernel", kernel), "property");
    check(env, napi_set_named_property(env, out, "threads", threads), "property");
    check(env, napi_set_named_property(env, out, "features", features), "property");
    return out;
  });
}

// setThreads(n): the pool's size (the caller's thread included).
napi_value SetThreads(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 1);
    const int64_t n = integer(env, argv[0], "threads");
    if (n < 1 || n > 256) throw Failure{"threads must be between 1 and 256"};
    pool().resize(static_cast<int>(n));
    return nullptr;
  });
}

// setKernel(name) → whether the CPU can run it ("avx512", "avx2", "portable"; tests compare them).
napi_value SetKernel(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 1);
    char name[32];
    size_t len;
    check(env, napi_get_value_string_utf8(env, argv[0], name, sizeof(name), &len), "kernel name");
    napi_value out;
    check(env, napi_get_boolean(env, select_gemm_kernel(name), &out), "boolean");
    return out;
  });
}

// chooseTokens(logits, B, V, temperature, allowed, live, rng, tokens, logprobs): allowed [V] and
// live [B] Uint8Arrays, rng the sfc32 state (a Uint32Array of 4, advanced in place), tokens an
// Int32Array [B] and logprobs a Float64Array [B] written for the live rows.
napi_value ChooseTokens(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 9);
    ChooseArgs a{};
    size_t xl, al, ll, rl, tl, pl;
    a.logits = f32(env, argv[0], "logits", &xl);
    a.B = integer(env, argv[1], "B");
    a.V = integer(env, argv[2], "V");
    double temperature;
    if (napi_get_value_double(env, argv[3], &temperature) != napi_ok || !(temperature >= 0))
      throw Failure{"temperature must be a non-negative number"};
    a.temperature = temperature;
    a.allowed = typed<uint8_t>(env, argv[4], "allowed", &al, napi_uint8_array, "a Uint8Array");
    a.live = typed<uint8_t>(env, argv[5], "live", &ll, napi_uint8_array, "a Uint8Array");
    a.rng = typed<uint32_t>(env, argv[6], "rng", &rl, napi_uint32_array, "a Uint32Array");
    a.tokens = typed<int32_t>(env, argv[7], "tokens", &tl, napi_int32_array, "an Int32Array");
    a.logprobs = typed<double>(env, argv[8], "logprobs", &pl, napi_float64_array, "a Float64Array");
    if (a.V < 1) throw Failure{"V must be at least 1"};
    need(xl, a.B * a.V, "logits");
    need(al, a.V, "allowed");
    need(ll, a.B, "live");
    need(rl, 4, "rng");
    need(tl, a.B, "tokens");
    need(pl, a.B, "logprobs");
    bool any = false;
    for (int64_t i = 0; i < a.V && !any; i++) any = a.allowed[i] != 0;
    if (!any) throw Failure{"every token is disallowed"};
    choose_tokens(a);
    return nullptr;
  });
}

// loraLinearForward(x, w, bias | null, a, b, scale, y, xa, n, in, out, r)
napi_value LoraLinearForward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 12);
    size_t x_len, w_len, bias_len = 0, a_len, b_len, y_len, xa_len;
    const float* x = f32(env, argv[0], "x", &x_len);
    const float* w = f32(env, argv[1], "w", &w_len);
    const float* bias = f32(env, argv[2], "bias", &bias_len, true);
    const float* a = f32(env, argv[3], "a", &a_len);
    const float* b = f32(env, argv[4], "b", &b_len);
    const float scale = number(env, argv[5], "scale");
    float* y = f32(env, argv[6], "y", &y_len);
    float* xa = f32(env, argv[7], "xa", &xa_len);
    const int64_t n = integer(env, argv[8], "n"), in = integer(env, argv[9], "in"), out = integer(env, argv[10], "out"),
                  r = integer(env, argv[11], "r");
    need(x_len, n * in, "x");
    need(w_len, in * out, "w");
    if (bias) need(bias_len, out, "bias");
    need(a_len, in * r, "a");
    need(b_len, r * out, "b");
    need(y_len, n * out, "y");
    need(xa_len, n * r, "xa");
    if (n > 0 && out > 0) lora_linear_forward(x, w, bias, a, b, scale, y, xa, n, in, out, r, pool().size());
    return nullptr;
  });
}

// loraLinearBackward(dy, x, xa, w, a, b, scale, dx, da, db, n, in, out, r)
napi_value LoraLinearBackward(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    auto argv = args(env, info, 14);
    size_t dy_len, x_len, xa_len, w_len, a_len, b_len, dx_len, da_len, db_len;
    const float* dy = f32(env, argv[0], "dy", &dy_len);
    const float* x = f32(env, argv[1], "x", &x_len);
    const float* xa = f32(env, argv[2], "xa", &xa_len);
    const float* w = f32(env, argv[3], "w", &w_len);
    const float* a = f32(env, argv[4], "a", &a_len);
    const float* b = f32(env, argv[5], "b", &b_len);
    const float scale = number(env, argv[6], "scale");
    float* dx = f32(env, argv[7], "dx", &dx_len);
    float* da = f32(env, argv[8], "da", &da_len);
    float* db = f32(env, argv[9], "db", &db_len);
    const int64_t n = integer(env, argv[10], "n"), in = integer(env, argv[11], "in"), out = integer(env, argv[12], "out"),
                  r = integer(env, argv[13], "r");
    need(dy_len, n * out, "dy");
    need(x_len, n * in, "x");
    need(xa_len, n * r, "xa");
    need(w_len, in * out, "w");
    need(a_len, in * r, "a");
    need(b_len, r * out, "b");
    need(dx_len, n * in, "dx");
    need(da_len, in * r, "da");
    need(db_len, r * out, "db");
    if (in > 0 && r > 0 && out > 0) lora_linear_backward(dy, x, xa, w, a, b, scale, dx, da, db, n, in, out, r, pool().size());
    return nullptr;
  });
}

napi_value Init(napi_env env, napi_value exports) {
  std::lock_guard<std::mutex> lock(calls);  // another JavaScript thread may be in a kernel
  try {
    pool().resize(default_threads());
  } catch (const std::exception&) {
    // No threads could start (a container's limit): the kernels run on the caller alone, and
    // info().threads says 1.
    pool().resize(1);
  }
  const napi_property_descriptor props[] = {
      {"gemm", nullptr, Gemm, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"info", nullptr, Info, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"setThreads", nullptr, SetThreads, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"setKernel", nullptr, SetKernel, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"attentionForward", nullptr, AttentionForward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"attentionBackward", nullptr, AttentionBackward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"rotaryAttentionForward", nullptr, RotaryAttentionForward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"rotaryAttentionBackward", nullptr, RotaryAttentionBackward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"rmsNormForward", nullptr, RmsNormForward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"rmsNormBackward", nullptr, RmsNormBackward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"swigluForward", nullptr, SwigluForward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"swigluBackward", nullptr, SwigluBackward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"loraLinearForward", nullptr, LoraLinearForward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"loraLinearBackward", nullptr, LoraLinearBackward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"decodeStep", nullptr, DecodeStep, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"layerNormForward", nullptr, LayerNormForward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"layerNormBackward", nullptr, LayerNormBackward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"geluForward", nullptr, GeluForward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"geluBackward", nullptr, GeluBackward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"adam", nullptr, Adam, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"columnSums", nullptr, ColumnSums, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"targetLogProbForward", nullptr, TargetLogProbForward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"targetLogProbBackward", nullptr, TargetLogProbBackward, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"sumSquares", nullptr, SumSquares, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"chooseTokens", nullptr, ChooseTokens, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}

}  // namespace
}  // namespace whetstone

NAPI_MODULE(NODE_GYP_MODULE_NAME, whetstone::Init)
