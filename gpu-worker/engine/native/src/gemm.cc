// Packed, cache-blocked matrix products in the manner of BLIS/GotoBLAS: op(B) is packed into
// panels of NR columns and op(A) into strips of MR rows, so that the microkernel streams both
// from cache with unit stride and keeps an MR×NR tile of C in registers. Transposed operands cost
// nothing extra: packing reads them in whatever layout they have.
//
// Every element of C is summed by one thread in the same order (K blocks in order, then k within
// a block) whatever the thread count and whichever thread takes it, so results do not depend on
// the number of threads.
#include "gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "pool.h"
#include "vmath.h"

namespace whetstone {

namespace {

struct Epilogue {
  bool accumulate;     // add to C (a later K block); else overwrite
  const float* bias;   // the tile's first column of the bias, or null
  bool relu;
};

using Microkernel = void (*)(int64_t kc, const float* ap, const float* bp, float* c, int64_t ldc, int mr_eff,
                             int nr_eff, const Epilogue& e);

struct Kernel {
  const char* name;
  int mr, nr;
  Microkernel run;
};

// Write the MR×NR tile (row-major, NR wide) into C: the first mr_eff rows, nr_eff columns.
template <int MR, int NR>
inline void store_tile(const float* tile, float* c, int64_t ldc, int mr_eff, int nr_eff, const Epilogue& e) {
  for (int i = 0; i < mr_eff; i++) {
    float* row = c + i * ldc;
    const float* t = tile + i * NR;
    if (nr_eff == NR) {
      float v[NR];
      for (int j = 0; j < NR; j++) v[j] = t[j];
      if (e.accumulate)
        for (int j = 0; j < NR; j++) v[j] += row[j];
      if (e.bias)
        for (int j = 0; j < NR; j++) v[j] += e.bias[j];
      if (e.relu)
        for (int j = 0; j < NR; j++) v[j] = v[j] < 0.f ? 0.f : v[j];  // NaN stays NaN
      for (int j = 0; j < NR; j++) row[j] = v[j];
    } else {
      for (int j = 0; j < nr_eff; j++) {
        float v = t[j];
        if (e.accumulate) v += row[j];
        if (e.bias) v += e.bias[j];
        if (e.relu) v = v < 0.f ? 0.f : v;
        row[j] = v;
      }
    }
  }
}

// The fallback for any CPU: plain loops the compiler vectorises for the baseline instruction set.
void ukr_portable(int64_t kc, const float* ap, const float* bp, float* c, int64_t ldc, int mr_eff, int nr_eff,
                  const Epilogue& e) {
  constexpr int MR = 4, NR = 16;
  alignas(64) float acc[MR * NR] = {};
  for (int64_t p = 0; p < kc; p++) {
    for (int i = 0; i < MR; i++) {
      const float a = ap[i];
      for (int j = 0; j < NR; j++) acc[i * NR + j] += a * bp[j];
    }
    ap += MR;
    bp += NR;
  }
  store_tile<MR, NR>(acc, c, ldc, mr_eff, nr_eff, e);
}

#if defined(__x86_64__)
// AVX2 + FMA: a 6×16 tile in 12 ymm accumulators (of 16 registers).
__attribute__((target("avx2,fma"))) void ukr_avx2(int64_t kc, const float* ap, const float* bp, float* c,
                                                   int64_t ldc, int mr_eff, int nr_eff, const Epilogue& e) {
  constexpr int MR = 6, NR = 16;
  __m256 acc0[MR], acc1[MR];
  for (int i = 0; i < MR; i++) acc0[i] = acc1[i] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; p++) {
    const __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
    for (int i = 0; i < MR; i++) {
      const __m256 a = _mm256_broadcast_ss(ap + i);
      acc0[i] = _mm256_fmadd_ps(a, b0, acc0[i]);
      acc1[i] = _mm256_fmadd_ps(a, b1, acc1[i]);
    }
    ap += MR;
    bp += NR;
  }
  // Through a tile in memory: indexing the accumulators by the run-time row count would keep the
  // compiler from holding them in registers.
  alignas(64) float tile[MR * NR];
  for (int i = 0; i < MR; i++) {
    _mm256_store_ps(tile + i * NR, acc0[i]);
    _mm256_store_ps(tile + i * NR + 8, acc1[i]);
  }
  store_tile<MR, NR>(tile, c, ldc, mr_eff, nr_eff, e);
}

// AVX-512: a 14×32 tile in 28 zmm accumulators (of 32 registers; B's two vectors and the broadcast
// take the other three). 14 rather than 12 rows: 24 multiply-adds per 14 loads became 28 per 16, and
// a LoRA step's 126 rows are nine whole strips (12 rows left a half-empty eleventh): 3–5% on its
// products, measured alternated on an Intel Xeon.
__attribute__((target("avx512f"))) void ukr_avx512(int64_t kc, const float* ap, const float* bp, float* c,
                                                  int64_t ldc, int mr_eff, int nr_eff, const Epilogue& e) {
  constexpr int MR = 14, NR = 32;
  __m512 acc0[MR], acc1[MR];
  for (int i = 0; i < MR; i++) acc0[i] = acc1[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; p++) {
    const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
    for (int i = 0; i < MR; i++) {
      const __m512 a = _mm512_set1_ps(ap[i]);
      acc0[i] = _mm512_fmadd_ps(a, b0, acc0[i]);
      acc1[i] = _mm512_fmadd_ps(a, b1, acc1[i]);
    }
    ap += MR;
    bp += NR;
  }
  if (mr_eff == MR && nr_eff == NR) {
    // A whole tile (the common case): straight from the registers into C.
    const __m512 zero = _mm512_setzero_ps();
    const __m512 bias0 = e.bias ? _mm512_loadu_ps(e.bias) : zero, bias1 = e.bias ? _mm512_loadu_ps(e.bias + 16) : zero;
    for (int i = 0; i < MR; i++) {
      float* row = c + i * ldc;
      __m512 v0 = acc0[i], v1 = acc1[i];
      if (e.accumulate) {
        v0 = _mm512_add_ps(v0, _mm512_loadu_ps(row));
        v1 = _mm512_add_ps(v1, _mm512_loadu_ps(row + 16));
      }
      if (e.bias) {
        v0 = _mm512_add_ps(v0, bias0);
        v1 = _mm512_add_ps(v1, bias1);
      }
      if (e.relu) {
        v0 = _mm512_max_ps(zero, v0);  // the second operand wins on NaN: NaN stays NaN
        v1 = _mm512_max_ps(zero, v1);
      }
      _mm512_storeu_ps(row, v0);
      _mm512_storeu_ps(row + 16, v1);
    }
    return;
  }
  alignas(64) float tile[MR * NR];
  for (int i = 0; i < MR; i++) {
    _mm512_store_ps(tile + i * NR, acc0[i]);
    _mm512_store_ps(tile + i * NR + 16, acc1[i]);
  }
  store_tile<MR, NR>(tile, c, ldc, mr_eff, nr_eff, e);
}
#endif

const Kernel kPortable{"portable", 4, 16, ukr_portable};
#if defined(__x86_64__)
const Kernel kAvx2{"avx2", 6, 16, ukr_avx2};
const Kernel kAvx512{"avx512", 14, 32, ukr_avx512};
#endif

const Kernel* best_kernel() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return &kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &kAvx2;
#endif
  return &kPortable;
}

const Kernel* chosen = best_kernel();

// K is blocked at 512: an NR-column strip of packed B (KC·NR floats, 64 KiB for AVX-512) outgrows
// L1 into L2, but C is passed over half as often as at 256 and A's strips are longer: on an Intel
// Xeon 5–12% faster on a training step's backward shapes ([512, 128, 2016] with A transposed 176–188
// → 185–203 GFLOP/s, [2016, 128, 512] with B transposed 205–231 → 230–247), 1024³ unchanged
// (alternated, 29 Nov). MC rows of packed A (MC·KC) stay in L2.
constexpr int64_t KC = 512;
// With a single row block (M ≤ MC) the strip outgrows L1 (80 KiB at 640), but it is read from L2
// for at most MC/MR tiles and C is passed over fewer times: measured faster on a LoRA step's shapes.
constexpr int64_t KC_ONE_BLOCK = 640;
constexpr int64_t NC = 4096;

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

#if defined(__x86_64__)
// r[i][j] → r[j][i] for a 16 × 16 block of floats held in registers. Pairs of rows interleaved,
// then quads: u[4g + c] holds, in each 128-bit lane l, column 4l + c of rows 4g..4g+3; then the
// 128-bit lanes: column 4l + c gathers lane l of u[c], u[4 + c], u[8 + c], u[12 + c].
__attribute__((target("avx512f"), always_inline)) inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16], v[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int g = 0; g < 4; g++) {
    const __m512 lo01 = t[4 * g], hi01 = t[4 * g + 1], lo23 = t[4 * g + 2], hi23 = t[4 * g + 3];
    u[4 * g + 0] = _mm512_shuffle_ps(lo01, lo23, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 1] = _mm512_shuffle_ps(lo01, lo23, _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * g + 2] = _mm512_shuffle_ps(hi01, hi23, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 3] = _mm512_shuffle_ps(hi01, hi23, _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; c++) {
    v[c] = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
    v[4 + c] = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
    v[8 + c] = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
    v[12 + c] = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
  }
  for (int c = 0; c < 4; c++) {
    r[c] = _mm512_shuffle_f32x4(v[c], v[8 + c], 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(v[c], v[8 + c], 0xdd);
    r[4 + c] = _mm512_shuffle_f32x4(v[4 + c], v[12 + c], 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(v[4 + c], v[12 + c], 0xdd);
  }
}

// A whole strip of a transposed B (nr rows of B, a multiple of 16, each kc long from src) packed
// 16×16 blocks at a time: sixteen rows loaded, transposed in registers, stored as sixteen k-rows of
// the strip. Element by element (strided stores, one float to each of kc cache lines per row of B)
// the transposed products ran ~30% slower than the plain ones on a LoRA step's shapes. The packed
// values are the same copies either way.
__attribute__((target("avx512f"))) void pack_b_trans_avx512(const float* src, int64_t ldb, int64_t kc, int nr,
                                                           float* d) {
  int64_t p = 0;
  for (; p + 16 <= kc; p += 16) {
    for (int jb = 0; jb < nr; jb += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + (jb + i) * ldb + p);
      transpose16(r);
      for (int q = 0; q < 16; q++) _mm512_store_ps(d + (p + q) * nr + jb, r[q]);
    }
  }
  for (int j = 0; j < nr; j++)
    for (int64_t q = p; q < kc; q++) d[q * nr + j] = src[j * ldb + q];
}

// One strip of a plain A (rows ≤ mr ≤ 16 rows of A from src, kc long) packed the same way: for
// each k its mr values, rows past `rows` zero. Element by element this was strided stores too,
// a pass the size of A for every column block.
__attribute__((target("avx512f"))) void pack_a_avx512(const float* src, int64_t lda, int64_t kc, int rows, int mr,
                                                     float* d) {
  const __mmask16 lanes = static_cast<__mmask16>((1u << mr) - 1);
  int64_t p = 0;
  for (; p + 16 <= kc; p += 16) {
    __m512 r[16];
    for (int i = 0; i < 16; i++) r[i] = i < rows ? _mm512_loadu_ps(src + i * lda + p) : _mm512_setzero_ps();
    transpose16(r);
    for (int q = 0; q < 16; q++) _mm512_mask_storeu_ps(d + (p + q) * mr, lanes, r[q]);
  }
  for (; p < kc; p++)
    for (int i = 0; i < mr; i++) d[p * mr + i] = i < rows ? src[i * lda + p] : 0.f;
}

const bool kAvx512Pack = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}();
#endif

// Rows [i0, i0+mc) × columns [p0, p0+kc) of op(A) into MR-row strips, zero-padded; strip s starts
// at dst + s·MR·kc and holds, for each k, its MR values.
void pack_a(const float* a, int64_t lda, bool trans, int64_t i0, int64_t mc, int64_t p0, int64_t kc, int mr,
            float* dst) {
  for (int64_t is = 0; is < mc; is += mr) {
    const int rows = static_cast<int>(std::min<int64_t>(mr, mc - is));
    float* d = dst + is * kc;
#if defined(__x86_64__)
    if (!trans && mr <= 16 && kAvx512Pack) {
      pack_a_avx512(a + (i0 + is) * lda + p0, lda, kc, rows, mr, d);
      continue;
    }
#endif
    if (!trans) {
      for (int r = 0; r < rows; r++) {
        const float* src = a + (i0 + is + r) * lda + p0;
        for (int64_t p = 0; p < kc; p++) d[p * mr + r] = src[p];
      }
    } else {
      for (int64_t p = 0; p < kc; p++) {
        const float* src = a + (p0 + p) * lda + i0 + is;
        for (int r = 0; r < rows; r++) d[p * mr + r] = src[r];
      }
    }
    for (int r = rows; r < mr; r++)
      for (int64_t p = 0; p < kc; p++) d[p * mr + r] = 0.f;
  }
}


// Strips [s0, s1) of NR columns of op(B) (from column j0, rows [p0, p0+kc)), zero-padded; strip s
// starts at dst + s·NR·kc (64-byte aligned: the workspace's buffer, strips of a multiple of 16 floats).
void pack_b(const float* b, int64_t ldb, bool trans, int64_t j0, int64_t nc, int64_t p0, int64_t kc, int nr,
            int64_t s0, int64_t s1, float* dst) {
  for (int64_t s = s0; s < s1; s++) {
    const int64_t js = s * nr;
    const int cols = static_cast<int>(std::min<int64_t>(nr, nc - js));
    float* d = dst + js * kc;
#if defined(__x86_64__)
    if (trans && cols == nr && nr % 16 == 0 && kAvx512Pack) {
      pack_b_trans_avx512(b + (j0 + js) * ldb + p0, ldb, kc, nr, d);
      continue;
    }
#endif
    if (!trans) {
      for (int64_t p = 0; p < kc; p++) {
        const float* src = b + (p0 + p) * ldb + j0 + js;
        float* row = d + p * nr;
        for (int j = 0; j < cols; j++) row[j] = src[j];
        for (int j = cols; j < nr; j++) row[j] = 0.f;
      }
    } else {
      for (int j = 0; j < cols; j++) {
        const float* src = b + (j0 + js + j) * ldb + p0;
        for (int64_t p = 0; p < kc; p++) d[p * nr + j] = src[p];
      }
      for (int j = cols; j < nr; j++)
        for (int64_t p = 0; p < kc; p++) d[p * nr + j] = 0.f;
    }
  }
}

struct AlignedBuffer {
  float* data = nullptr;
  size_t size = 0;
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  // Moved, not copied, when the workspace grows (a copy would free the same memory twice).
  AlignedBuffer(AlignedBuffer&& other) noexcept : data(other.data), size(other.size) {
    other.data = nullptr;
    other.size = 0;
  }
  ~AlignedBuffer() { std::free(data); }
  float* get(size_t n) {
    if (n > size) {
      std::free(data);
      data = static_cast<float*>(std::aligned_alloc(64, round_up(static_cast<int64_t>(n) * 4, 64)));
      size = n;
    }
    return data;
  }
};

// Packing buffers: one A buffer per thread, and B buffers (one shared, or one per thread when
// threads take whole batch items).
struct Workspace {
  std::vector<AlignedBuffer> a, b;
  void reserve(int threads) {
    if (static_cast<int>(a.size()) < threads) {
      a.resize(threads);
      b.resize(threads);
    }
  }
};
Workspace workspace;

// A one-row product, c = a·op(B) (+ bias): the column sums of the backward passes ([1, n] ones
// times a gradient). Packing would copy all of B for one row of work, so B is streamed as it lies.
void gemv_row(const float* a, const float* b, float* c, const GemmArgs& g) {
  const int64_t N = g.n, K = g.k;
  if (!g.trans_b) {
    for (int64_t j = 0; j < N; j++) c[j] = g.bias ? g.bias[j] : 0.f;
    for (int64_t p = 0; p < K; p++) {
      const float ap = a[p];
      const float* row = b + p * N;
      for (int64_t j = 0; j < N; j++) c[j] += ap * row[j];
    }
  } else {
    for (int64_t j = 0; j < N; j++) {
      const float* row = b + j * K;
      float sum = 0.f;
      for (int64_t p = 0; p < K; p++) sum += a[p] * row[p];
      c[j] = sum + (g.bias ? g.bias[j] : 0.f);
    }
  }
  if (g.relu)
    for (int64_t j = 0; j < N; j++) c[j] = c[j] < 0.f ? 0.f : c[j];
}

// A skinny product (one of m, n, k at most kSkinny: LoRA's rank-8 factors, x·A, (x·A)·B and
// their gradients) on the calling thread, without packing: row i of C is built as
// Σ_k op(A)[i, k] · op(B)[k, :], each term one pass over a contiguous row of op(B) (op(B) copied
// to [k, n] first when B is transposed: it is the small factor here). The packed microkernel pads
// such products to its 14×32 tile (four times the work at n = 8) and packs both operands for a
// few hundred thousand multiply-adds: 2–5 GFLOP/s measured on a LoRA step's shapes. Each element
// of C sums its k terms in order, so the result does not depend on anything but the operands.
constexpr int64_t kSkinny = 16;

typedef float v16 __attribute__((vector_size(64)));
// Loads through this type are unaligned (the scratch is a std::vector's memory).
typedef float v16u __attribute__((vector_size(64), aligned(4)));

// R rows of C from a narrow op(B) copied to [K, 16] (bt): R independent accumulators, so that the
// multiply-adds of R rows overlap instead of each waiting for the previous one's result (one row
// at a time was bound by the add's latency: 13–15 GFLOP/s). Each element still sums its k terms in
// order after the bias, so the rows come out as they did one at a time.
template <int R, bool TransA>
__attribute__((always_inline)) inline void skinny_rows(const float* a, const float* bt, float* c, int64_t i0,
                                                       const v16& init, const GemmArgs& g) {
  const int64_t M = g.m, N = g.n, K = g.k;
  v16 acc[R];
  for (int r = 0; r < R; r++) acc[r] = init;
  for (int64_t p = 0; p < K; p++) {
    const v16 bp = *reinterpret_cast<const v16u*>(bt + p * kSkinny);
    for (int r = 0; r < R; r++) acc[r] += (TransA ? a[p * M + i0 + r] : a[(i0 + r) * K + p]) * bp;
  }
  for (int r = 0; r < R; r++) {
    float* ci = c + (i0 + r) * N;
    for (int64_t j = 0; j < N; j++) ci[j] = g.relu && acc[r][j] < 0.f ? 0.f : acc[r][j];
  }
}

template <bool TransA>
__attribute__((always_inline)) inline void skinny_narrow(const float* a, const float* bt, float* c, const v16& init,
                                                         const GemmArgs& g) {
  int64_t i = 0;
  for (; i + 8 <= g.m; i += 8) skinny_rows<8, TransA>(a, bt, c, i, init, g);
  for (; i < g.m; i++) skinny_rows<1, TransA>(a, bt, c, i, init, g);
}

// Row i of C over a wide op(B) ([K, N] rows): 64 columns at a time held in four accumulators
// across all k (C written once, not once per k), each element summed in k order after the bias.
__attribute__((always_inline)) inline void skinny_wide_row(const float* a, const float* rows, float* ci, int64_t i,
                                                           const GemmArgs& g) {
  const int64_t M = g.m, N = g.n, K = g.k;
  auto a_at = [&](int64_t p) { return g.trans_a ? a[p * M + i] : a[i * K + p]; };
  int64_t j = 0;
  for (; j + 64 <= N; j += 64) {
    v16 acc[4];
    for (int q = 0; q < 4; q++) acc[q] = g.bias ? *reinterpret_cast<const v16u*>(g.bias + j + 16 * q) : v16{};
    for (int64_t p = 0; p < K; p++) {
      const float aip = a_at(p);
      const float* bp = rows + p * N + j;
      for (int q = 0; q < 4; q++) acc[q] += aip * *reinterpret_cast<const v16u*>(bp + 16 * q);
    }
    for (int q = 0; q < 4; q++) *reinterpret_cast<v16u*>(ci + j + 16 * q) = acc[q];
  }
  if (g.relu)
    for (int64_t t = 0; t < j; t++) ci[t] = ci[t] < 0.f ? 0.f : ci[t];
  if (j == N) return;
  float* __restrict tail = ci + j;
  const int64_t left = N - j;
  for (int64_t t = 0; t < left; t++) tail[t] = g.bias ? g.bias[j + t] : 0.f;
  for (int64_t p = 0; p < K; p++) {
    const float aip = a_at(p);
    const float* __restrict bp = rows + p * N + j;
    for (int64_t t = 0; t < left; t++) tail[t] += aip * bp[t];
  }
  if (g.relu)
    for (int64_t t = 0; t < left; t++) tail[t] = tail[t] < 0.f ? 0.f : tail[t];
}

WHETSTONE_CLONES void gemm_skinny(const float* a, const float* b, float* c, const GemmArgs& g) {
  const int64_t M = g.m, N = g.n, K = g.k;
  thread_local std::vector<float> bt;
  if (N <= kSkinny) {
    // A narrow op(B) (x·A's [in, 8]): copied zero-padded to 16 columns, so that each of C's rows
    // is one 16-float accumulator and each term one vector multiply-add.
    bt.assign(K * kSkinny, 0.f);
    for (int64_t p = 0; p < K; p++)
      for (int64_t j = 0; j < N; j++) bt[p * kSkinny + j] = g.trans_b ? b[j * K + p] : b[p * N + j];
    v16 init = {};
    if (g.bias)
      for (int64_t j = 0; j < N; j++) init[j] = g.bias[j];
    if (g.trans_a) skinny_narrow<true>(a, bt.data(), c, init, g);
    else skinny_narrow<false>(a, bt.data(), c, init, g);
    return;
  }
  const float* rows = b;  // op(B) as [K, N]
  if (g.trans_b) {
    bt.resize(K * N);
    for (int64_t j = 0; j < N; j++)
      for (int64_t p = 0; p < K; p++) bt[p * N + j] = b[j * K + p];
    rows = bt.data();
  }
  for (int64_t i = 0; i < M; i++) skinny_wide_row(a, rows, c + i * N, i, g);
}

// A product of few rows (a decoding step's batch: m ≤ kFewRows) with a plain B: packing B would
// copy all of it (its strips gathered from rows of B far apart) for a handful of rows of work, at
// ~3 GB/s; here B is read once, row by row down 64-column chunks (each chunk's rows stream in
// order), into R×64 accumulators held in registers, R ≤ 4 rows at a time (a chunk of B is re-read
// from cache for each further group of rows). Each element sums its k terms in order after its
// bias, whichever thread takes the chunk.
constexpr int64_t kFewRows = 16;
constexpr int64_t kAhead = 8;

template <int R, int W>
__attribute__((always_inline)) inline void few_rows_tile(const float* a, const float* b, float* c, int64_t i0,
                                                         int64_t j, const GemmArgs& g) {
  const int64_t M = g.m, N = g.n, K = g.k;
  constexpr int V = W / 16;
  v16 acc[R][V];
  for (int r = 0; r < R; r++)
    for (int v = 0; v < V; v++) acc[r][v] = g.bias ? *reinterpret_cast<const v16u*>(g.bias + j + 16 * v) : v16{};
  for (int64_t p = 0; p < K; p++) {
    // B's rows lie N floats apart (2–6 KiB here), which the hardware prefetchers follow poorly:
    // each row would wait on memory. Asked for kAhead rows ahead (a prefetch never faults).
    for (int v = 0; v < V; v++) __builtin_prefetch(b + (p + kAhead) * N + j + 16 * v);
    v16 bp[V];
    for (int v = 0; v < V; v++) bp[v] = *reinterpret_cast<const v16u*>(b + p * N + j + 16 * v);
    for (int r = 0; r < R; r++) {
      const float ar = g.trans_a ? a[p * M + i0 + r] : a[(i0 + r) * K + p];
      for (int v = 0; v < V; v++) acc[r][v] += ar * bp[v];
    }
  }
  for (int r = 0; r < R; r++)
    for (int v = 0; v < V; v++) {
      v16 out = acc[r][v];
      if (g.relu)
        for (int l = 0; l < 16; l++) out[l] = out[l] < 0.f ? 0.f : out[l];
      *reinterpret_cast<v16u*>(c + (i0 + r) * N + j + 16 * v) = out;
    }
}

template <int W>
__attribute__((always_inline)) inline void few_rows_columns(const float* a, const float* b, float* c, int64_t j,
                                                            const GemmArgs& g) {
  int64_t i = 0;
  for (; i + 4 <= g.m; i += 4) few_rows_tile<4, W>(a, b, c, i, j, g);
  switch (g.m - i) {
    case 3: few_rows_tile<3, W>(a, b, c, i, j, g); break;
    case 2: few_rows_tile<2, W>(a, b, c, i, j, g); break;
    case 1: few_rows_tile<1, W>(a, b, c, i, j, g); break;
    default: break;
  }
}

// Columns [j0, j1) of C (j0 a multiple of 64): whole 64-column chunks, then 16, then one at a time.
WHETSTONE_CLONES void few_rows_block(const float* a, const float* b, float* c, int64_t j0, int64_t j1,
                                     const GemmArgs& g) {
  const int64_t M = g.m, N = g.n, K = g.k;
  int64_t j = j0;
  for (; j + 64 <= j1; j += 64) few_rows_columns<64>(a, b, c, j, g);
  for (; j + 16 <= j1; j += 16) few_rows_columns<16>(a, b, c, j, g);
  for (; j < j1; j++)
    for (int64_t i = 0; i < M; i++) {
      float sum = g.bias ? g.bias[j] : 0.f;
      for (int64_t p = 0; p < K; p++) sum += (g.trans_a ? a[p * M + i] : a[i * K + p]) * b[p * N + j];
      c[i * N + j] = g.relu && sum < 0.f ? 0.f : sum;
    }
}

void gemm_few_rows(const float* a, const float* b, float* c, const GemmArgs& g, int threads) {
  constexpr int64_t kChunk = 256;  // columns a thread takes at a time
  const int64_t chunks = (g.n + kChunk - 1) / kChunk;
  if (threads <= 1 || chunks < 2) {
    few_rows_block(a, b, c, 0, g.n, g);
    return;
  }
  std::atomic<int64_t> next{0};
  pool().run(threads, [&](int) {
    for (int64_t ch; (ch = next.fetch_add(1)) < chunks;)
      few_rows_block(a, b, c, ch * kChunk, std::min(g.n, (ch + 1) * kChunk), g);
  });
}

// One product on `threads` threads (thread t uses workspace.a[t]; B is packed into workspace.b[b_slot]).
void gemm_one(const Kernel& K, const float* a, const float* b, float* c, const GemmArgs& g, int threads, int t_base,
              int b_slot) {
  const int64_t M = g.m, N = g.n, Kd = g.k;
  const int64_t lda = g.trans_a ? M : Kd, ldb = g.trans_b ? Kd : N, ldc = N;
  const int mr = K.mr, nr = K.nr;
  const int64_t MC = mr * 16;
  if (Kd == 0) {
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        float v = g.bias ? g.bias[j] : 0.f;
        c[i * ldc + j] = g.relu && v < 0.f ? 0.f : v;
      }
    return;
  }
  // One row block (M ≤ MC: a LoRA step's 126 rows): its A strips fit L2 for deeper K blocks, and
  // fewer blocks mean fewer passes over C and fewer waits for the pool's threads.
  const int64_t KCb = M <= MC ? KC_ONE_BLOCK : KC;
  float* bp = workspace.b[b_slot].get(KCb * round_up(std::min(N, NC), nr));
  for (int t = 0; t < threads; t++) workspace.a[t_base + t].get(MC * KCb);
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t nc = std::min(NC, N - jc);
    const int64_t strips = (nc + nr - 1) / nr;
    for (int64_t pc = 0; pc < Kd; pc += KCb) {
      const int64_t kc = std::min(KCb, Kd - pc);
      const bool first = pc == 0, last = pc + kc == Kd;
      const int64_t row_blocks = (M + MC - 1) / MC;
      // With one row block (M ≤ MC: a training step's 126 rows of a LoRA step, a sampler's prefill)
      // every strip of B serves one item, so the item packs its own strips just before using them:
      // B is read once and its packed copy stays in cache, instead of a pass that packs all of B
      // (which for a large weight goes out to memory and back) behind a barrier. Several row
      // blocks share each strip, so B is packed first, once. Same packed values either way.
      const bool pack_in_items = row_blocks == 1;
      if (!pack_in_items) {
        std::atomic<int64_t> next_strip{0};
        pool().run(threads, [&](int) {
          for (int64_t s0; (s0 = next_strip.fetch_add(2)) < strips;)
            pack_b(b, ldb, g.trans_b, jc, nc, pc, kc, nr, s0, std::min(s0 + 2, strips), bp);
        });
      }
      // Work items: (row block, column chunk), enough of them to share out; a thread packs a row
      // block's A again only when its next item is of another block.
      const int64_t chunks = std::min<int64_t>(strips, (8 * threads + row_blocks - 1) / row_blocks);
      const int64_t items = row_blocks * chunks;
      std::atomic<int64_t> next_item{0};
      pool().run(threads, [&](int t) {
        float* ap = workspace.a[t_base + t].data;
        int64_t packed = -1;
        for (int64_t item; (item = next_item.fetch_add(1)) < items;) {
          const int64_t rb = item / chunks, ch = item % chunks;
          const int64_t ic = rb * MC, mc = std::min(MC, M - ic);
          if (packed != rb) {
            pack_a(a, lda, g.trans_a, ic, mc, pc, kc, mr, ap);
            packed = rb;
          }
          const int64_t s_begin = strips * ch / chunks, s_end = strips * (ch + 1) / chunks;
          if (pack_in_items) pack_b(b, ldb, g.trans_b, jc, nc, pc, kc, nr, s_begin, s_end, bp);
          for (int64_t s = s_begin; s < s_end; s++) {
            const int64_t j = s * nr;
            const int nr_eff = static_cast<int>(std::min<int64_t>(nr, nc - j));
            const Epilogue e{!first, first && g.bias ? g.bias + jc + j : nullptr, last && g.relu};
            for (int64_t ir = 0; ir < mc; ir += mr) {
              const int mr_eff = static_cast<int>(std::min<int64_t>(mr, mc - ir));
              K.run(kc, ap + ir * kc, bp + j * kc, c + (ic + ir) * ldc + jc + j, ldc, mr_eff, nr_eff, e);
            }
          }
        }
      });
    }
  }
}

}  // namespace

const char* gemm_kernel_name() { return chosen->name; }

bool select_gemm_kernel(const char* name) {
  const Kernel* best = best_kernel();
  const Kernel* all[] = {
#if defined(__x86_64__)
      &kAvx512, &kAvx2,
#endif
      &kPortable};
  bool at_or_below_best = false;
  for (const Kernel* k : all) {
    if (k == best) at_or_below_best = true;
    if (at_or_below_best && std::strcmp(k->name, name) == 0) {
      chosen = k;
      return true;
    }
  }
  return false;
}

// Below this many multiply-adds a product runs on the calling thread alone: waking the pool's
// threads (tens of microseconds when they sleep) costs more than the work (~20 µs here): a
// decoding step's products (64 rows) run alone.
constexpr int64_t kParallelMin = 1 << 22;

void gemm(const GemmArgs& g, int threads) {
  const Kernel& K = *chosen;
  threads = std::max(1, std::min(threads, pool().size()));
  if (g.batch * g.m * g.n * g.k < kParallelMin) threads = 1;
  // One row: op(A) is k contiguous floats whether or not A is transposed ([1, k] or [k, 1]).
  if (g.m == 1) {
    const int64_t c_size = g.n;
    for (int64_t i = 0; i < g.batch; i++) gemv_row(g.a + i * g.a_stride, g.b + i * g.b_stride, g.c + i * c_size, g);
    return;
  }
  const int64_t c_size = g.m * g.n;
  if (g.m <= kFewRows && !g.trans_b && g.n >= 64 && g.k > kSkinny) {
    for (int64_t i = 0; i < g.batch; i++)
      gemm_few_rows(g.a + i * g.a_stride, g.b + i * g.b_stride, g.c + i * c_size, g, threads);
    return;
  }
  if (threads == 1 && std::min({g.m, g.n, g.k}) <= kSkinny) {
    for (int64_t i = 0; i < g.batch; i++) gemm_skinny(g.a + i * g.a_stride, g.b + i * g.b_stride, g.c + i * c_size, g);
    return;
  }
  // Many small products (attention's per-head matrices): whole items per thread, each packed and
  // multiplied by one thread, instead of splitting each small product.
  if (g.batch >= 2 * threads && threads > 1 && g.m * g.n * g.k <= 128 * 128 * 128) {
    workspace.reserve(threads);
    std::atomic<int64_t> next{0};
    pool().run(threads, [&](int t) {
      for (int64_t i; (i = next.fetch_add(1)) < g.batch;)
        gemm_one(K, g.a + i * g.a_stride, g.b + i * g.b_stride, g.c + i * c_size, g, 1, t, t);
    });
    return;
  }
  workspace.reserve(threads);
  for (int64_t i = 0; i < g.batch; i++)
    gemm_one(K, g.a + i * g.a_stride, g.b + i * g.b_stride, g.c + i * c_size, g, threads, 0, 0);
}

}  // namespace whetstone
