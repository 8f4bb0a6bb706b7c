// CUDA kernels of fusesample::spmm (contract: ../spmm.cpp), included by the
// per-element-type translation units spmm_kernel_<dtype>.cu.
//
// One kernel template covers 'warp' and 'subwarp': a group of G lanes owns a
// row (G = 32 for 'warp'; for 'subwarp' 8, four short rows per warp, or the
// given lanes when more, see row_group). Inside
// a group, lanes split both the feature vectors (16-byte loads when F and
// the pointers allow) and the row's non-zeros, so narrow F does not idle
// lanes; float32 accumulators, combined across non-zero slots by shuffles.
// A feature tile is vlanes * kVecs vectors; wide F loops over tiles.
// 'hub' runs the same kernel on rows with <= hub_threshold non-zeros, and the
// heavier rows in chunks of non-zeros, a thread block each (see below), the
// two kernels side by side on two streams; 'hub-subwarp' likewise with the
// light rows packed as in 'subwarp'.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "../../common/grid.h"
#include "../../common/warps.cuh"
#include "../spmm_common.h"
#include "spmm_launch.h"

namespace fusesample {
namespace spmm_kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kSubwarpLanes = 8;

// Vectors per lane per tile (kVecs) and the blocks per SM asked of
// __launch_bounds__ (so a register cap of 65536 / (kThreads * n)), per
// element type, vector width and kernel family (kHubSplit: 'hub' and
// 'hub-subwarp', whose light rows are short). The gathers are latency-bound,
// so the trade is loads in flight per warp against resident warps; on the
// H200 (git 0e1e631: scripts/device/spmm_min_blocks.py):
// - 16-bit lanes hold 2 16-byte vectors (16 accumulators; 4 cost 80-104
//   registers, call73; scalar rows keep 4 values) under a cap of 5 blocks,
//   48 registers: products-like bf16 F=128 took 8.6 ms at 5 blocks, 9.1 at
//   4, 10.6 at 3 (call81).
// - 32-bit lanes in 'warp' and 'subwarp' hold 4 vectors under 3 blocks (80
//   registers; left to itself nvcc moved between builds from 80 to 84-86,
//   2 blocks: products-like F=32 5.9 ms instead of 4.9, call81). With 2
//   vectors, Erdos-Renyi ran 2-7% slower (call83).
// - 32-bit lanes of the hub-split kernels hold 2 vectors under 6 blocks (40
//   registers): products-like F=16/32/64 took 2.94/4.68/7.75 ms against
//   3.54/4.85/7.98 with 4 vectors at 3 blocks, hub-skewed F=16 0.69 against
//   0.78 ms (call83).
// - Doubles keep 4 vectors and the compiler's choice.
// - Layouts of one vector a lane (lanes >= vectors per row: the scheduler
//   probes them) on rows of at least 8 vectors run on a kernel of one vector
//   a lane, which drops the dead columns' registers, under 8 blocks (32
//   registers; 16-bit lanes: see the next item). With 2 non-zeros a pass,
//   under 6 blocks for 16-bit 'warp'/'subwarp', bf16 F=128 took 1.43 ms
//   against 1.59 on Erdos-Renyi (1.68 at 8 blocks), 7.16 against 8.48 ms
//   on the products-like graph (7.57 at 6); float32 F=64 on the hub-skewed
//   graph 1.56 against 1.76 (call85). On rows of 2 or 4 vectors it lost
//   (call86's probes, Reddit-like bf16: F=16 'hub' at 2 lanes 0.140 against
//   0.113 ms, F=32 at 4 lanes 0.213 against 0.176).
// - 16-bit one-vector lanes gather 4 of their non-zeros a pass (`passes`;
//   every other 16-bit lane 2, see accumulate) under 5 blocks (48
//   registers): 4 vectors in flight a lane, as the 2-vector lanes. Against
//   2 a pass under 8 blocks ('hub', 'hub-subwarp') or 6 ('warp',
//   'subwarp'), bf16 on the H200 (git 0e1e631: scripts/device/spmm_kernel_ab.py,
//   call111): Erdos-Renyi F=64/128/256 1.05/1.09/1.04x faster,
//   products-like 1.04/1.06/1.04x, hub-skewed F=128/256 0.99/1.00x,
//   Reddit-like F=128 0.99x; 4 a pass under 6 blocks (40 registers) lost
//   5-20%, 3 under 6 blocks won less (ER F=128 1.02x).
template <typename scalar_t, int V, bool kHubSplit, bool kOneVector>
struct Tuning {
  static constexpr bool k16 = sizeof(scalar_t) == 2, k32 = sizeof(scalar_t) == 4;
  static constexpr int vecs =
      kOneVector ? 1 : (k16 && V == 8) || (k32 && V == 4 && kHubSplit) ? 2 : 4;
  static constexpr int min_blocks = !(k16 || k32) ? 1
                                    : kOneVector  ? (k16 ? 5 : 8)
                                    : k16         ? 5
                                    : vecs == 2   ? 6
                                                  : 3;
  static constexpr int passes = k16 && kOneVector ? 4 : 2;
};

template <typename scalar_t, int V>
struct alignas(sizeof(scalar_t) * V) Vec {
  scalar_t v[V];
};

// Widening to the accumulator type. bf16 is the upper half of an fp32, so it
// widens with integer ops: c10::BFloat16 -> float compiles to one
// cvt.f32.bf16 per element (8 per 16-byte vector; bf16 ran ~1.8x slower
// than fp32 at the same bytes per row on an H200), while a 32-bit word of
// two bf16 (little-endian: element 2i in the low half) takes a shift and a
// mask.
template <typename scalar_t, typename acc_t>
__device__ __forceinline__ acc_t widen(scalar_t v) {
  if constexpr (std::is_same_v<scalar_t, c10::BFloat16>)
    return __uint_as_float(static_cast<uint32_t>(v.x) << 16);
  else
    return static_cast<acc_t>(v);
}

// Loads the V elements at p (one load of the whole vector) into out, widened.
// bf16 vectors load as 32-bit words, unpacked as above.
template <typename scalar_t, int V, typename acc_t>
__device__ __forceinline__ void load_acc(const scalar_t* p, acc_t (&out)[V]) {
  if constexpr (std::is_same_v<scalar_t, c10::BFloat16> && V % 2 == 0) {
    const Vec<uint32_t, V / 2> w = *reinterpret_cast<const Vec<uint32_t, V / 2>*>(p);
#pragma unroll
    for (int i = 0; i < V / 2; ++i) {
      out[2 * i] = __uint_as_float(w.v[i] << 16);
      out[2 * i + 1] = __uint_as_float(w.v[i] & 0xffff0000u);
    }
  } else {
    const Vec<scalar_t, V> v = *reinterpret_cast<const Vec<scalar_t, V>*>(p);
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = widen<scalar_t, acc_t>(v.v[i]);
  }
}

// Lane layout inside a group of G lanes that owns a row: `vlanes` lanes
// across the feature vectors of a tile (kVecs vectors each) times
// G / vlanes edge slots, so a narrow row still keeps every lane loading --
// 32 of a row's non-zeros in flight at F = 16 instead of one. The slots'
// partial sums are combined with shuffles at the end of the tile.
struct Layout {
  int group, vlanes;
};

// This lane's partial sum over non-zeros e0 + slot, e0 + slot + step, ...
// of its vectors of the tile starting at vector t0. Each vector lies in one
// head (the host takes the vector path only when C is a multiple of V), so
// the edge weight is one load per vector, its head offset computed once.
template <bool kWeighted, int kPass, typename scalar_t, typename index_t, int V, int kVecs,
          typename acc_t>
__device__ __forceinline__ void accumulate(
    const index_t* __restrict__ col, const scalar_t* __restrict__ value,
    const scalar_t* __restrict__ x, int64_t F, int64_t C, int64_t heads,
    int64_t e0, int64_t e1, int64_t step, int64_t first, int vlanes,
    int64_t nvec, acc_t (&acc)[kVecs][V]) {
  int64_t head[kVecs];
#pragma unroll
  for (int j = 0; j < kVecs; ++j)
    head[j] = kWeighted ? ((first + static_cast<int64_t>(j) * vlanes) * V) / C : 0;
  if constexpr (sizeof(scalar_t) == 2) {
    // 16-bit rows: kPass of the slot's non-zeros per pass (Tuning::passes),
    // all indices and then all rows loaded before any sum (those past the
    // end predicated off, their terms zero), so kPass gathers are always in
    // flight. On the H200 two a pass took bf16 F=128 on the products-like
    // graph from 16.3 to 12.9 ms; for 4- and 8-byte rows the loop below,
    // which the compiler unrolls itself, stays (float32 F=32: 5.0 ms, 5.5
    // with this form and evict-first index loads, call35).
    for (int64_t e = e0; e < e1; e += kPass * step) {
      int64_t src[kPass];
      bool ok[kPass];
#pragma unroll
      for (int p = 0; p < kPass; ++p) {
        ok[p] = p == 0 || e + p * step < e1;
        src[p] = ok[p] ? static_cast<int64_t>(col[e + p * step]) * F : 0;
      }
#pragma unroll
      for (int j = 0; j < kVecs; ++j) {
        const int64_t vi = first + static_cast<int64_t>(j) * vlanes;
        if (vi < nvec) {
          acc_t xs[kPass][V];
#pragma unroll
          for (int p = 0; p < kPass; ++p) {
            if (ok[p])
              load_acc(x + src[p] + vi * V, xs[p]);
            else
#pragma unroll
              for (int i = 0; i < V; ++i) xs[p][i] = acc_t(0);
          }
          if (kWeighted) {
            acc_t w[kPass];
#pragma unroll
            for (int p = 0; p < kPass; ++p)
              w[p] = ok[p] ? widen<scalar_t, acc_t>(value[(e + p * step) * heads + head[j]])
                           : acc_t(0);
#pragma unroll
            for (int i = 0; i < V; ++i) {
              acc_t sum = w[0] * xs[0][i];
#pragma unroll
              for (int p = 1; p < kPass; ++p) sum += w[p] * xs[p][i];
              acc[j][i] += sum;
            }
          } else {
#pragma unroll
            for (int i = 0; i < V; ++i) {
              acc_t sum = xs[0][i];
#pragma unroll
              for (int p = 1; p < kPass; ++p) sum += xs[p][i];
              acc[j][i] += sum;
            }
          }
        }
      }
    }
  } else {
#pragma unroll 2
    for (int64_t e = e0; e < e1; e += step) {
      const int64_t src = static_cast<int64_t>(col[e]) * F;
#pragma unroll
      for (int j = 0; j < kVecs; ++j) {
        const int64_t vi = first + static_cast<int64_t>(j) * vlanes;
        if (vi < nvec) {
          acc_t xv[V];
          load_acc(x + src + vi * V, xv);
          if (kWeighted) {
            const acc_t w = widen<scalar_t, acc_t>(value[e * heads + head[j]]);
#pragma unroll
            for (int i = 0; i < V; ++i) acc[j][i] += w * xv[i];
          } else {
#pragma unroll
            for (int i = 0; i < V; ++i) acc[j][i] += xv[i];
          }
        }
      }
    }
  }
}

// Sums the partials of the edge slots of a group (lanes vlanes apart), for
// the first `live` vector columns j of the tile (those with a vector inside
// the row; at narrow F the rest are zeros and their shuffles are skipped).
// Every lane of the warp must call it, with the same `live`.
template <int V, int kVecs, typename acc_t>
__device__ __forceinline__ void reduce_slots(acc_t (&acc)[kVecs][V], int vlanes, int group,
                                             int live) {
  for (int off = vlanes; off < group; off <<= 1)
#pragma unroll
    for (int j = 0; j < kVecs; ++j)
      if (j < live)
#pragma unroll
        for (int i = 0; i < V; ++i)
          acc[j][i] += __shfl_xor_sync(0xffffffffu, acc[j][i], off);
}

// Vector columns j of the tile starting at vector t0 that hold a vector of
// the row for some lane (warp-uniform).
template <int kVecs>
__device__ __forceinline__ int live_columns(int64_t t0, int vlanes, int64_t nvec) {
  const int64_t left = (nvec - t0 + vlanes - 1) / vlanes;
  return left < kVecs ? static_cast<int>(left) : kVecs;
}

constexpr int log2_of(int n) { return n > 1 ? 1 + log2_of(n / 2) : 0; }

// The same sums by recursive halving, for lanes of at most 16 values. At
// each level a lane keeps one half of its live values, receives its
// partner's copy of that half and sends the other, so a level costs half the
// shuffles of the one before (fp32 F=32, 16 slots: 8 + 4 + 2 + 1 shuffles for
// the 64 of reduce_slots). After h = min(levels, log2 N) halvings the lane's
// first kept = N >> h values are the sums of flat indices [first, first +
// kept) (flat index j * V + i of acc[j][i]); further levels (more slots than
// values) sum the one value left, so only slots < N / kept hold distinct
// sums. On the H200 this took the products-like fp32 F=32 SpMM from 5.5 to
// 5.0 ms, but ran bf16 (N = 32) 2.5-5x slower (call67-69), so 16-bit rows
// keep reduce_slots (uses_halving). Every lane of the warp must call it.
template <int V, int kVecs, typename acc_t>
__device__ __forceinline__ int reduce_scatter_slots(acc_t (&acc)[kVecs][V], int vlanes,
                                                    int group, int slot, int& first) {
  constexpr int N = kVecs * V, kLevels = log2_of(N);
  int kept = N, level = 0;
  first = 0;
  // An affine level loop, so it unrolls and every acc index is a constant.
#pragma unroll
  for (int l = 0; l < kLevels; ++l) {
    const int s = N >> (l + 1);
    const int off = vlanes << level;
    if (off >= group) break;
    const bool upper = (slot >> level) & 1;
#pragma unroll
    for (int n = 0; n < s; ++n) {
      acc_t& lo = acc[n / V][n % V];
      const acc_t hi = acc[(n + s) / V][(n + s) % V];
      const acc_t send = upper ? lo : hi;
      lo = (upper ? hi : lo) + __shfl_xor_sync(0xffffffffu, send, off);
    }
    if (upper) first += s;
    kept = s;
    ++level;
  }
  for (int off = vlanes << level; off < group; off <<= 1)
    acc[0][0] += __shfl_xor_sync(0xffffffffu, acc[0][0], off);
  return kept;
}

// Calls store(vector index, element, sum) for each sum this lane kept after
// reduce_scatter_slots (vectors past the row's end skipped): flat index
// j * V + i of lane vl's values is element i of vector t0 + vl + j * vlanes.
template <int V, int kVecs, typename acc_t, typename Store>
__device__ __forceinline__ void for_kept(const acc_t (&acc)[kVecs][V], int kept,
                                         int first, int64_t t0, int vl, int vlanes,
                                         int64_t nvec, Store store) {
#pragma unroll
  for (int p = 0; p < kVecs * V; ++p) {
    if (p >= kept) break;
    const int idx = first + p;
    const int64_t vi = t0 + vl + static_cast<int64_t>(idx / V) * vlanes;
    if (vi < nvec) store(vi, idx % V, acc[p / V][p % V]);
  }
}

// Whether a group reduces by halving (see above): not 16-bit vectors, lanes
// of at most 16 values, at least 8 slots. With 4 slots (fp32 F=128) halving
// measured 5% slower on the hub-skewed graph (3.19 vs 3.03 ms, call67-69).
template <int V, int kVecs>
__device__ __forceinline__ bool uses_halving(int slots) {
  return V != 8 && kVecs * V <= 16 && slots >= 8;
}

// kOrdered (a hub-split variant given its light rows, CSRGraph.light_rows):
// work item i is row order[i]; otherwise row i (order unused), and the
// kernel is the one from before orders existed.
template <bool kWeighted, typename scalar_t, typename index_t, int V, int kVecs,
          int kMinBlocks, int kPass, bool kOrdered>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
spmm_rows_kernel(const int64_t* __restrict__ rowptr, const index_t* __restrict__ col,
                 const scalar_t* __restrict__ value, const scalar_t* __restrict__ x,
                 scalar_t* __restrict__ out, int64_t R, int64_t F, int64_t heads,
                 bool mean, Layout layout, int64_t skip_above,
                 const int64_t* __restrict__ order, int64_t count) {
  using acc_t = at::opmath_type<scalar_t>;
  const int group = layout.group, vlanes = layout.vlanes;
  const int lane = threadIdx.x & 31;
  const int sub = lane % group, vl = sub % vlanes, slot = sub / vlanes;
  const int64_t rows_per_warp = 32 / group;
  const int64_t warp = global_warp(), warps = warp_count();
  const int64_t nvec = F / V, C = F / heads, tile = static_cast<int64_t>(vlanes) * kVecs;
  // The row of work item i (ordered: -1 for none; unordered: i, a row when
  // below R, exactly the code before orders). The light rows by length: rows
  // that share a warp then take about as many passes; in index order a warp
  // waits for the longest of its rows, on the hub-skewed graph 2.2x the
  // passes of sorted rows. Unordered kernels keep the index arithmetic: a
  // runtime choice in every kernel cost Erdos-Renyi's 'subwarp' 8-24% at
  // F=16/32 (call104), and the same choice at compile time with a sentinel
  // row of -1 still 10% at bf16 F=16 (call105).
  auto row_at = [&](int64_t i) -> int64_t {
    if constexpr (kOrdered) {
      if (i >= count) return -1;
      const int64_t r = order[i];
      return r >= 0 && r < R ? r : -1;
    } else {
      return i;
    }
  };
  auto valid = [&](int64_t r) -> bool {
    if constexpr (kOrdered)
      return r >= 0;
    else
      return r < R;
  };
  const int64_t items = kOrdered ? count : R;
  // The warp-uniform loop keeps every lane in the shuffles; a group without
  // a row (past the end, or a hub row left to the block kernel) adds zeros.
  // The next item's extent is loaded while this row is summed: on short rows
  // the chain rowptr -> col -> x is most of a row's time. The item's row is
  // looked up again (a cache hit) rather than carried over from that load:
  // one 64-bit value fewer live across the row, where the one-vector
  // kernels have 32 registers (call102: carried, products-like bf16 F=128
  // at 16 lanes took 10.0 ms against 7.2 before the order existed).
  const int64_t stride = warps * rows_per_warp;
  auto extent = [&](int64_t r, int64_t& e0, int64_t& e1) {
    e0 = e1 = 0;
    if (valid(r)) {
      e0 = rowptr[r];
      e1 = rowptr[r + 1];
    }
  };
  int64_t next0, next1;
  extent(row_at(warp * rows_per_warp + lane / group), next0, next1);
  for (int64_t base = warp * rows_per_warp; base < items; base += stride) {
    const int64_t item = base + lane / group;
    int64_t e0 = next0, e1 = next1;
    extent(row_at(item + stride), next0, next1);
    const int64_t r = row_at(item);
    const bool active = valid(r) && !(skip_above >= 0 && e1 - e0 > skip_above);
    if (!active) e1 = e0;
    const acc_t scale = mean && e1 > e0 ? acc_t(1) / static_cast<acc_t>(e1 - e0) : acc_t(1);
    for (int64_t t0 = 0; t0 < nvec; t0 += tile) {
      acc_t acc[kVecs][V] = {};
      accumulate<kWeighted, kPass, scalar_t, index_t, V>(col, value, x, F, C, heads,
                                                         e0 + slot, e1, group / vlanes,
                                                         t0 + vl, vlanes, nvec, acc);
      if (uses_halving<V, kVecs>(group / vlanes)) {
        int first;
        const int kept = reduce_scatter_slots<V>(acc, vlanes, group, slot, first);
        if (!active || slot >= kVecs * V / kept) continue;
        for_kept<V>(acc, kept, first, t0, vl, vlanes, nvec,
                    [&](int64_t vi, int i, acc_t sum) {
                      out[r * F + vi * V + i] = static_cast<scalar_t>(sum * scale);
                    });
      } else {
        reduce_slots<V>(acc, vlanes, group, live_columns<kVecs>(t0, vlanes, nvec));
        if (!active || slot != 0) continue;
#pragma unroll
        for (int j = 0; j < kVecs; ++j) {
          const int64_t vi = t0 + vl + static_cast<int64_t>(j) * vlanes;
          if (vi < nvec) {
            Vec<scalar_t, V> o;
#pragma unroll
            for (int i = 0; i < V; ++i) o.v[i] = static_cast<scalar_t>(acc[j][i] * scale);
            *reinterpret_cast<Vec<scalar_t, V>*>(out + r * F + vi * V) = o;
          }
        }
      }
    }
  }
}

// Hub rows in chunks: hub_chunks[c] = (row, begin, end), chunks of a row
// adjacent. A block per chunk: its warps split the chunk's non-zeros (each
// warp one 32-lane group), partial sums meet in shared memory and go to
// partial[c]; spmm_hub_combine_kernel then adds each row's chunks in order.
// A row of 300,000 non-zeros thus spreads over many blocks (AutoSAGE's
// CTA-per-hub split, refined for rows too long for one block).
template <bool kWeighted, typename scalar_t, typename index_t, int V, int kVecs,
          int kMinBlocks, int kPass>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
spmm_hub_kernel(const index_t* __restrict__ col, const scalar_t* __restrict__ value,
                const scalar_t* __restrict__ x, const int64_t* __restrict__ chunks,
                int64_t num_chunks, int64_t F, int64_t heads, int vlanes,
                at::opmath_type<scalar_t>* __restrict__ partial) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr int kWarps = kThreads / 32;
  __shared__ acc_t part[kWarps][32 * kVecs * V];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int vl = lane % vlanes, slot = lane / vlanes, slots = 32 / vlanes;
  const int64_t nvec = F / V, C = F / heads, tile = static_cast<int64_t>(vlanes) * kVecs;
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const int64_t e0 = chunks[3 * c + 1], e1 = chunks[3 * c + 2];
    for (int64_t t0 = 0; t0 < nvec; t0 += tile) {
      acc_t acc[kVecs][V] = {};
      accumulate<kWeighted, kPass, scalar_t, index_t, V>(
          col, value, x, F, C, heads, e0 + warp * slots + slot, e1, kWarps * slots,
          t0 + vl, vlanes, nvec, acc);
      // part[warp][(j * vlanes + vl) * V + i] is element i of vector
      // t0 + j * vlanes + vl, i.e. feature t0 * V + that index.
      if (uses_halving<V, kVecs>(slots)) {
        int first;
        const int kept = reduce_scatter_slots<V>(acc, vlanes, 32, slot, first);
        if (slot < kVecs * V / kept)
          for_kept<V>(acc, kept, first, t0, vl, vlanes, nvec,
                      [&](int64_t vi, int i, acc_t sum) {
                        part[warp][(vi - t0) * V + i] = sum;
                      });
      } else {
        reduce_slots<V>(acc, vlanes, 32, live_columns<kVecs>(t0, vlanes, nvec));
        if (slot == 0)
#pragma unroll
          for (int j = 0; j < kVecs; ++j)
#pragma unroll
            for (int i = 0; i < V; ++i) part[warp][(j * vlanes + vl) * V + i] = acc[j][i];
      }
      __syncthreads();
      // The warps' partials meet in order (deterministic), a feature a thread.
      const int64_t width = tile * V < F - t0 * V ? tile * V : F - t0 * V;
      for (int64_t v = threadIdx.x; v < width; v += kThreads) {
        acc_t sum = 0;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) sum += part[w][v];
        partial[c * F + t0 * V + v] = sum;
      }
      __syncthreads();
    }
  }
}

// A block per chunk that starts its row: the row's chunks summed in order.
// The run of chunks is counted first, a window of a block's threads at a
// time, so the sums' loads are independent (a loop that tested each chunk's
// row before loading it took 80 us on a 147-chunk row, longer than the rest
// of the kernel).
template <typename scalar_t>
__global__ void __launch_bounds__(kThreads)
spmm_hub_combine_kernel(const int64_t* __restrict__ rowptr,
                        const int64_t* __restrict__ chunks, int64_t num_chunks,
                        const at::opmath_type<scalar_t>* __restrict__ partial,
                        scalar_t* __restrict__ out, int64_t F, bool mean) {
  using acc_t = at::opmath_type<scalar_t>;
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const int64_t r = chunks[3 * c];
    if (c > 0 && chunks[3 * (c - 1)] == r) continue;
    // A row's chunks are adjacent, so the matches in a window are a prefix.
    int64_t n = 0;
    for (int64_t w = c;; w += blockDim.x) {
      const int64_t k = w + threadIdx.x;
      const int same = __syncthreads_count(k < num_chunks && chunks[3 * k] == r);
      n += same;
      if (same < static_cast<int>(blockDim.x)) break;
    }
    const int64_t deg = rowptr[r + 1] - rowptr[r];
    const acc_t scale = mean && deg > 0 ? acc_t(1) / static_cast<acc_t>(deg) : acc_t(1);
    for (int64_t f = threadIdx.x; f < F; f += blockDim.x) {
      acc_t sum = 0;
#pragma unroll 8
      for (int64_t k = c; k < c + n; ++k) sum += partial[k * F + f];
      out[r * F + f] = static_cast<scalar_t>(sum * scale);
    }
  }
}

// Lanes of the group that owns a row in the rows kernel: a warp for 'warp'
// and 'hub'; in the packed variants ('subwarp', 'hub-subwarp') 8, or `lanes`
// when more, so a layout of one vector a lane gives each row just the lanes
// across its vectors: one edge slot, 32 / lanes rows a warp. On short rows a
// warp a row leaves slots idle; on the H200 (call117, A/B of the same
// kernel, bf16) hub-skewed F=64 / 128 ran 1.25 / 1.12x faster packed,
// Erdos-Renyi F=64 1.21x, products-like F=64 1.16x, but Reddit-like's long
// rows 0.90-0.93x at F=64, so the scheduler probes both.
int row_group(SpmmVariant variant, int64_t lanes) {
  if (!packs_rows(variant)) return 32;
  return static_cast<int>(std::max<int64_t>(kSubwarpLanes, lanes));
}

// FUSESAMPLE_SPMM_SERIAL_HUBS=1 runs the hub chunks after the light rows on
// one stream (the ablation of the concurrent launch).
bool concurrent_hub_chunks() {
  static const bool serial = [] {
    const char* env = std::getenv("FUSESAMPLE_SPMM_SERIAL_HUBS");
    return env != nullptr && std::string(env) == "1";
  }();
  return !serial;
}

// Lanes across vectors: `lanes` if given (the scheduler probes layouts),
// else enough that kVecs vectors each cover the row; at most the group. The
// rest of the group splits the non-zeros.
template <int kVecs>
int vector_lanes(int64_t nvec, int group, int64_t lanes) {
  if (lanes > 0) return static_cast<int>(std::min<int64_t>(lanes, group));
  int v = 1;
  while (v < group && static_cast<int64_t>(v) * kVecs < nvec) v <<= 1;
  return v;
}

// kHubSplit: the variant is 'hub' or 'hub-subwarp' (only those instantiate
// the chunk kernels).
template <bool kWeighted, typename scalar_t, typename index_t, int V, bool kHubSplit,
          int kVecs, int kMinBlocks, int kPass>
void launch_tuned(const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& value,
                  const at::Tensor& x, at::Tensor& out, int64_t heads, bool mean,
                  SpmmVariant variant, int64_t hub_threshold, const at::Tensor& hub_chunks,
                  int64_t lanes, const at::Tensor& light_rows) {
  const int64_t R = rowptr.numel() - 1, F = x.size(1), nvec = F / V;
  const int group = row_group(variant, lanes);
  const Layout layout{group, vector_lanes<kVecs>(nvec, group, lanes)};
  const at::cuda::CUDAStream main = at::cuda::getCurrentCUDAStream();
  const cudaStream_t stream = main.stream();
  const scalar_t* vp = kWeighted ? value.data_ptr<scalar_t>() : nullptr;
  const int64_t skip = kHubSplit ? hub_threshold : -1;
  // The light rows in the given order (hub-split variants), else all rows.
  const bool ordered = kHubSplit && light_rows.defined();
  const int64_t count = ordered ? light_rows.numel() : R;
  const int64_t* order = ordered ? light_rows.data_ptr<int64_t>() : nullptr;
  const int64_t warps = (count + 32 / group - 1) / (32 / group);
  // The hub chunks run on a second stream, beside the light rows: each
  // kernel alone leaves the memory system idle (short rows wait on the chain
  // rowptr -> col -> x, chunks on their block reductions), and serially
  // each also paid the other's tail. The rows kernel skips the hub rows and
  // the chunks write only `partial`, so the two are independent; the
  // combine, which writes the hub rows of `out`, joins them. (`partial` and
  // the inputs are freed to this stream, whose later work comes after the
  // join, so they need no record_stream.)
  const int64_t K = kHubSplit ? hub_chunks.size(0) : 0;
  using acc_t = at::opmath_type<scalar_t>;
  at::Tensor partial;
  at::cuda::CUDAEvent joined;
  const bool concurrent = K > 0 && count > 0 && concurrent_hub_chunks();
  const int64_t hub_blocks = grid_blocks(K, 1, 16);  // a block per chunk
  if constexpr (kHubSplit) {
    if (K > 0) {
      partial = at::empty({K, F}, x.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
      c10::optional<at::cuda::CUDAStream> side;
      if (concurrent) {
        side = at::cuda::getStreamFromPool(/*isHighPriority=*/false, main.device_index());
        at::cuda::CUDAEvent forked;
        forked.record(main);
        forked.block(*side);
      }
      spmm_hub_kernel<kWeighted, scalar_t, index_t, V, kVecs, kMinBlocks, kPass>
          <<<hub_blocks, kThreads, 0, side ? side->stream() : stream>>>(
              col.data_ptr<index_t>(), vp, x.data_ptr<scalar_t>(),
              hub_chunks.data_ptr<int64_t>(), K, F, heads, vector_lanes<kVecs>(nvec, 32, lanes),
              partial.data_ptr<acc_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      if (side) joined.record(*side);
    }
  }
  if (count > 0) {
    // Without an order the hub-split variants run the index-order kernel
    // (the scheduler probes both: in call106 the ordered 16-bit kernels ran
    // 4-14% slower on the hub-skewed graph).
    auto rows = [&](auto ordered_flag) {
      constexpr bool kOrdered = decltype(ordered_flag)::value;
      spmm_rows_kernel<kWeighted, scalar_t, index_t, V, kVecs, kMinBlocks, kPass, kOrdered>
          <<<grid_blocks(warps, kThreads / 32, 64), kThreads, 0, stream>>>(
              rowptr.data_ptr<int64_t>(), col.data_ptr<index_t>(), vp,
              x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), R, F, heads, mean,
              layout, skip, order, count);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    if constexpr (kHubSplit) {
      if (ordered) rows(std::true_type{});
    }
    if (!ordered) rows(std::false_type{});
  }
  if constexpr (kHubSplit) {
    if (K > 0) {
      if (concurrent) joined.block(main);
      spmm_hub_combine_kernel<scalar_t><<<hub_blocks, kThreads, 0, stream>>>(
          rowptr.data_ptr<int64_t>(), hub_chunks.data_ptr<int64_t>(), K,
          partial.data_ptr<acc_t>(), out.data_ptr<scalar_t>(), F, mean);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }
}

// The variant's family and the lane layout pick the tuning (instantiations
// with equal tunings are one).
template <bool kWeighted, typename scalar_t, typename index_t, int V>
void launch(const at::Tensor& rowptr, const at::Tensor& col, const at::Tensor& value,
            const at::Tensor& x, at::Tensor& out, int64_t heads, bool mean,
            SpmmVariant variant, int64_t hub_threshold, const at::Tensor& hub_chunks,
            int64_t lanes, const at::Tensor& light_rows) {
  const int64_t nvec = x.size(1) / V;
  const int group = row_group(variant, lanes);
  // Given lanes across the vectors (capped at the group, of `group` lanes in
  // the rows kernel and 32 in the hub kernel) that cover the row leave each
  // lane one vector or none.
  const bool one_vector = lanes > 0 && nvec >= 8 && std::min<int64_t>(lanes, group) >= nvec;
  auto run = [&](auto hub_split, auto one) {
    constexpr bool kHubSplit = decltype(hub_split)::value;
    using T = Tuning<scalar_t, V, kHubSplit, decltype(one)::value>;
    launch_tuned<kWeighted, scalar_t, index_t, V, kHubSplit, T::vecs, T::min_blocks, T::passes>(
        rowptr, col, value, x, out, heads, mean, variant, hub_threshold, hub_chunks, lanes,
        light_rows);
  };
  const bool hubs = splits_hubs(variant);
  if (hubs && one_vector)
    run(std::true_type{}, std::true_type{});
  else if (hubs)
    run(std::true_type{}, std::false_type{});
  else if (one_vector)
    run(std::false_type{}, std::true_type{});
  else
    run(std::false_type{}, std::false_type{});
}

bool aligned(const at::Tensor& t, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % bytes == 0;
}

}  // namespace

template <typename scalar_t>
void run(const SpmmLaunch& a) {
  AT_DISPATCH_INDEX_TYPES(a.col.scalar_type(), "spmm_cuda", [&] {
    // 16-byte vectors when every row start is 16-byte aligned and every
    // vector lies within one head.
    const int64_t F = a.x.size(1);
    constexpr int V16 = 16 / sizeof(scalar_t);
    const bool vec = F % V16 == 0 && (F / a.heads) % V16 == 0 && aligned(a.x, 16) &&
                     aligned(a.out, 16);
    auto go = [&](auto weighted) {
      constexpr bool kW = decltype(weighted)::value;
      at::Tensor out = a.out;
      if (vec)
        launch<kW, scalar_t, index_t, V16>(a.rowptr, a.col, a.value, a.x, out, a.heads, a.mean,
                                           a.variant, a.hub_threshold, a.hub_chunks, a.lanes,
                                           a.light_rows);
      else
        launch<kW, scalar_t, index_t, 1>(a.rowptr, a.col, a.value, a.x, out, a.heads, a.mean,
                                         a.variant, a.hub_threshold, a.hub_chunks, a.lanes,
                                         a.light_rows);
    };
    if (a.value.defined())
      go(std::true_type{});
    else
      go(std::false_type{});
  });
}

}  // namespace spmm_kernels
}  // namespace fusesample
