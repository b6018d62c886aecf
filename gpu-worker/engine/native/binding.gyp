# The engine's native CPU kernels (README: "Native kernels"). Built by `npm ci` (scripts/postinstall.mjs)
# with node-gyp as npm ships it; when the build fails the engine keeps its wasm kernels.
# No -march flag: the binary must run on any x86-64 or arm64 CPU. The AVX2 and AVX-512 kernels are
# compiled per function (target attributes) and chosen at run time from the CPU's features.
{
  "targets": [
    {
      "target_name": "whetstone_native",
      "sources": ["src/addon.cc", "src/attention.cc", "src/choose.cc", "src/decode.cc", "src/elementwise.cc", "src/gemm.cc", "src/logprob.cc", "src/lora.cc", "src/optim.cc", "src/pool.cc", "src/rotary_attention.cc"],
      "cflags_cc": ["-O3", "-std=c++17", "-fno-math-errno", "-Wall", "-Wextra"],
      "cflags_cc!": ["-fno-exceptions"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
