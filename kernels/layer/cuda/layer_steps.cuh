// The device steps of fusesample::layer_sample's CUDA path (the host side,
// which orders them, is layer_sample_kernel.cu). A batch keeps one dense map
// global id -> local id over the graph's nodes, so membership ("is u a target
// yet?") is one read instead of the sorts and searches the ATen composition
// (layer_sample_driver.h, the CPU path) uses; the draws and the order of every
// output are the driver's, so both devices return the same samples.
//
// Counts the host needs later (candidates, new nodes, kept edges, the next
// layer's in-edges) are written to a small device array `counters` that the
// host reads once per layer. Kernels sized by a capacity read the live count
// from it and treat the rest as padding.
#pragma once

#include <cstdint>
#include <limits>

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>

#include "../../common/det_math.h"
#include "../layer_draws.h"

namespace fusesample {
namespace layer {
namespace fused {

constexpr int kThreads = 256;
constexpr int32_t kUnmapped = std::numeric_limits<int32_t>::max();

// Slots of `counters` (int64).
enum Counter : int {
  kBadSeed = 0,     // a seed id outside [0, N) (checked at the first read)
  kNumCand,         // candidates (LADIES: distinct sources; FastGCN: drawn)
  kLive,            // LADIES: candidates of positive importance
  kFresh,           // new nodes of the layer
  kKept,            // edges of the layer
  kNextPositions,   // in-edges of the next layer's targets
  kBlocksDone,      // importance_total_kernel's finished blocks
  kCounterSlots
};

#define FS_GRID_STRIDE(i, n)                                                  \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; \
       i < (n); i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// The first of the n non-decreasing ends[] above i: the segment of position i.
__device__ __forceinline__ int64_t segment_of(const int64_t* ends, int64_t n,
                                              int64_t i) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (ends[mid] <= i) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// Position of u in the ascending ids sorted[0:n], or -1.
__host__ __device__ __forceinline__ int64_t find_sorted(const int64_t* sorted, int64_t n,
                                               int64_t u) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] < u) lo = mid + 1; else hi = mid;
  }
  return lo < n && sorted[lo] == u ? lo : -1;
}

// Whether item i was selected, from the inclusive scan `rank` of the 0/1
// selection flags: the rank rose at i.
__device__ __forceinline__ bool rose(const int64_t* rank, int64_t i) {
  return rank[i] > (i > 0 ? rank[i - 1] : 0);
}

// In-degree of target t: the scan's input for a layer's in-edge layout. The
// targets are node[0 : n + *extra] (extra: the new nodes a previous kernel
// counted, or none); past them, and at an out-of-range seed, 0.
struct TargetDegree {
  const int64_t* colptr;
  const int64_t* node;
  int64_t n;
  const int64_t* extra;
  int64_t num_nodes;
  __host__ __device__ int64_t operator()(int64_t t) const {
    if (t >= n + (extra != nullptr ? *extra : 0)) return 0;
    const int64_t v = node[t];
    return v >= 0 && v < num_nodes ? colptr[v + 1] - colptr[v] : 0;
  }
};

// 1 where a run of equal ids starts in the ascending sorted[].
struct RunHead {
  const int64_t* sorted;
  __host__ __device__ int64_t operator()(int64_t j) const {
    return j == 0 || sorted[j] != sorted[j - 1];
  }
};

// 1 where candidate g is drawn and not yet a target (cand unique and
// ascending; pick == nullptr: every one of the *num_cand is drawn).
struct FreshCandidate {
  const int64_t* cand;
  const uint8_t* pick;
  const int64_t* num_cand;
  const int32_t* map;
  __host__ __device__ int64_t operator()(int64_t g) const {
    return g < *num_cand && (pick == nullptr || pick[g]) &&
           map[cand[g]] == kUnmapped;
  }
};

// 1 where the layer keeps in-edge position i: LADIES, its source is a target
// of the next layer (mapped); FastGCN, its source was drawn (cand holds the
// drawn ids, ascending).
struct KeptEdge {
  bool fastgcn;
  const int64_t* src;
  const int32_t* map;
  const int64_t* cand;       // FastGCN only
  const int64_t* num_cand;   // FastGCN only
  __host__ __device__ int64_t operator()(int64_t i) const {
    return fastgcn ? find_sorted(cand, *num_cand, src[i]) >= 0
                   : map[src[i]] != kUnmapped;
  }
};

// The seeds become targets 0..B-1 (the first of a repeated id wins).
__global__ void map_seeds_kernel(const int64_t* __restrict__ seed, int64_t b,
                                 int64_t num_nodes, int32_t* __restrict__ map,
                                 int64_t* __restrict__ node,
                                 int64_t* __restrict__ counters) {
  FS_GRID_STRIDE(i, b) {
    const int64_t v = seed[i];
    node[i] = v;
    if (v < 0 || v >= num_nodes) counters[kBadSeed] = 1;
    else atomicMin(map + v, static_cast<int32_t>(i));
  }
}

// Position i of the targets' in-edges (target by target, CSC order): its
// target's local id, CSC slot, source, the permutation's identity (the
// source sort's values) and, for LADIES, its squared value.
template <class index_t>
__global__ void in_edges_kernel(const int64_t* __restrict__ colptr,
                                const index_t* __restrict__ row,
                                const double* __restrict__ value,
                                const int64_t* __restrict__ node,
                                const int64_t* __restrict__ ends, int64_t n,
                                int64_t m, int64_t* __restrict__ tgt,
                                int64_t* __restrict__ slot,
                                int64_t* __restrict__ src,
                                int32_t* __restrict__ identity,
                                double* __restrict__ val2) {
  FS_GRID_STRIDE(i, m) {
    const int64_t t = segment_of(ends, n, i);
    const int64_t k = in_edge_slot(colptr, node, ends, t, i);
    tgt[i] = t;
    slot[i] = k;
    src[i] = static_cast<int64_t>(row[k]);
    identity[i] = static_cast<int32_t>(i);
    if (val2 != nullptr) {
      const double v = value != nullptr ? value[k] : 1.0;
      val2[i] = FS_MUL(v, v);
    }
  }
}

// The runs of the source-sorted positions are the candidates: run g starts
// at start[g] and holds candidate cand[g]; each position learns its run.
__global__ void candidate_runs_kernel(const int64_t* __restrict__ sorted_src,
                                      const int32_t* __restrict__ order,
                                      const int64_t* __restrict__ run_end,
                                      int64_t m, int64_t* __restrict__ run_of,
                                      int64_t* __restrict__ start,
                                      int64_t* __restrict__ cand,
                                      int64_t* __restrict__ counters) {
  FS_GRID_STRIDE(j, m) {
    const int64_t g = run_end[j] - 1;
    run_of[order[j]] = g;
    if (rose(run_end, j)) {  // (a run's head: RunHead's scan rose)
      start[g] = j;
      cand[g] = sorted_src[j];
    }
    if (j == m - 1) {
      start[g + 1] = m;
      counters[kNumCand] = g + 1;
    }
  }
}

// The squared values in the source sort's order (position order within a
// run: the sort is stable), read through its permutation.
struct SortedVal2 {
  const double* val2;
  const int32_t* order;
  __host__ __device__ double operator[](int64_t k) const {
    return val2[order[k]];
  }
};

// LADIES' importance and key per candidate (layer_draws.h), summed in the
// CPU's order; padding past the candidates: q 0, key +inf.
__global__ void ladies_keys_kernel(const int64_t* __restrict__ start,
                                   const int64_t* __restrict__ cand,
                                   SortedVal2 val2,
                                   const int64_t* __restrict__ counters,
                                   int64_t capacity, uint64_t rng_seed,
                                   int64_t layer, double* __restrict__ q,
                                   double* __restrict__ key) {
  const int64_t num_cand = counters[kNumCand];
  FS_GRID_STRIDE(g, capacity) {
    if (g < num_cand) {
      ladies_key(val2, start[g], start[g + 1], rng_seed, layer, cand[g], q + g,
                 key + g);
    } else {
      q[g] = 0.0;
      key[g] = std::numeric_limits<double>::infinity();
    }
  }
}

// The importances' sum (the weights' normaliser) and how many are positive,
// over the grid: each block reduces its share (a grid-stride loop over a
// grid sized by the capacity: the same shares every time) into partial[b],
// and the block that finishes last adds the partials in block order, so the
// sum is the same from run to run. One launch over all multiprocessors,
// where a single block took 30-60 us a batch beside the training step.
constexpr int kTotalThreads = 256;
__global__ void __launch_bounds__(kTotalThreads)
importance_total_kernel(const double* __restrict__ q,
                        int64_t* __restrict__ counters,
                        double* __restrict__ partial_sum,
                        int64_t* __restrict__ partial_live,
                        double* __restrict__ total) {
  using SumReduce = cub::BlockReduce<double, kTotalThreads>;
  using CountReduce = cub::BlockReduce<int64_t, kTotalThreads>;
  __shared__ typename SumReduce::TempStorage sum_storage;
  __shared__ typename CountReduce::TempStorage count_storage;
  __shared__ bool last;
  const int64_t n = counters[kNumCand];
  double sum = 0.0;
  int64_t live = 0;
  FS_GRID_STRIDE(g, n) {
    sum += q[g];
    live += q[g] > 0.0;
  }
  sum = SumReduce(sum_storage).Sum(sum);
  live = CountReduce(count_storage).Sum(live);
  if (threadIdx.x == 0) {
    partial_sum[blockIdx.x] = sum;
    partial_live[blockIdx.x] = live;
    __threadfence();  // (the partials visible before the count says so)
    const auto done = atomicAdd(
        reinterpret_cast<unsigned long long*>(counters + kBlocksDone), 1ull);
    last = done == gridDim.x - 1;
  }
  __syncthreads();
  if (!last || threadIdx.x != 0) return;
  __threadfence();
  double all = 0.0;
  int64_t all_live = 0;
  for (unsigned b = 0; b < gridDim.x; ++b) {
    all += partial_sum[b];
    all_live += partial_live[b];
  }
  *total = all;
  counters[kLive] = all_live;
}

// LADIES' s smallest keys for s <= kMaxTournament, a tournament of block
// sorts instead of a device-wide sort of all keys (~10 launches and as many
// memsets a layer for 64-bit keys): each block sorts a chunk of
// (key, candidate) pairs in shared memory and keeps its s smallest; the kept
// ones are the next round's input, until one chunk is left, whose s
// smallest finite keys are drawn. A round divides the pairs by at least 2,
// so a layer's hundred thousand candidates take three or four launches. Any
// of the s smallest keys of all is among the s smallest of its chunk; the
// sort is stable and the chunks stay in order, so ties go to the lower
// candidate index at every round, as one stable sort would.
constexpr int kSelectThreads = 512;
constexpr int kSelectItems = 8;
constexpr int64_t kSelectChunk = kSelectThreads * kSelectItems;
constexpr int64_t kMaxTournament = kSelectChunk / 2;

// One round over the pairs [0, n) (the first `*live` only when given: the
// rest are padding): chunk b's s smallest go to out at b * s. With `pick`
// (the last round, one chunk): pick[candidate] = 1 for those that are finite.
__global__ void __launch_bounds__(kSelectThreads)
smallest_keys_round_kernel(const double* __restrict__ key,
                           const int32_t* __restrict__ index,
                           int64_t n, const int64_t* __restrict__ live,
                           int64_t s, double* __restrict__ out_key,
                           int32_t* __restrict__ out_index,
                           uint8_t* __restrict__ pick) {
  using Sort = cub::BlockRadixSort<double, kSelectThreads, kSelectItems, int32_t>;
  __shared__ typename Sort::TempStorage storage;
  const double inf = std::numeric_limits<double>::infinity();
  const int64_t limit = live != nullptr ? min(n, *live) : n;
  const int64_t first = blockIdx.x * kSelectChunk + threadIdx.x * kSelectItems;
  double k[kSelectItems];
  int32_t v[kSelectItems];
  for (int j = 0; j < kSelectItems; ++j) {  // (blocked: input order = rank order)
    const int64_t i = first + j;
    k[j] = i < limit ? key[i] : inf;
    v[j] = i < limit ? (index != nullptr ? index[i] : static_cast<int32_t>(i)) : -1;
  }
  Sort(storage).Sort(k, v);
  for (int j = 0; j < kSelectItems; ++j) {
    const int64_t r = threadIdx.x * kSelectItems + j;
    if (r >= s) break;
    if (pick != nullptr) {
      if (k[j] < inf) pick[v[j]] = 1;
    } else {
      out_key[blockIdx.x * s + r] = k[j];
      out_index[blockIdx.x * s + r] = v[j];
    }
  }
}

// LADIES' draw: candidate g is drawn when its key is finite (positive
// importance) and among the s smallest (s >= 0, keys sorted ascending with
// their candidates), or for s < 0 whenever its importance is positive.
__global__ void ladies_pick_kernel(const double* __restrict__ key_sorted,
                                   const int32_t* __restrict__ cand_sorted,
                                   const double* __restrict__ q,
                                   int64_t capacity, int64_t s,
                                   uint8_t* __restrict__ pick) {
  FS_GRID_STRIDE(r, capacity) {
    if (s < 0) pick[r] = q[r] > 0.0;
    else pick[cand_sorted[r]] =
        r < s && key_sorted[r] < std::numeric_limits<double>::infinity();
  }
}

__global__ void fastgcn_draws_kernel(const double* __restrict__ cum, int64_t n,
                                     int64_t s, uint64_t rng_seed, int64_t l,
                                     int64_t* __restrict__ out) {
  FS_GRID_STRIDE(j, s) out[j] = fastgcn_draw(cum, n, rng_seed, l, j);
}

// FastGCN's importance of node u (layer_sample_driver.h: diff of the prefix
// sums, the first against 0).
__host__ __device__ __forceinline__ double node_importance(const double* cum,
                                                          int64_t u) {
  return cum[u] - (u > 0 ? cum[u - 1] : 0.0);
}

struct PositiveImportance {
  const double* cum;
  __host__ __device__ bool operator()(int64_t u) const {
    return node_importance(cum, u) > 0.0;
  }
};

// The fresh candidates, in candidate (ascending id) order, become targets
// n, n + 1, ...; their count goes to counters[kFresh].
__global__ void append_fresh_kernel(const int64_t* __restrict__ cand,
                                    const int64_t* __restrict__ rank,
                                    int64_t capacity, int64_t n,
                                    int32_t* __restrict__ map,
                                    int64_t* __restrict__ out,
                                    int64_t* __restrict__ counters) {
  FS_GRID_STRIDE(g, capacity) {
    if (rose(rank, g)) {
      const int64_t r = rank[g] - 1;
      out[r] = cand[g];
      map[cand[g]] = static_cast<int32_t>(n + r);
    }
    if (g == capacity - 1) counters[kFresh] = rank[g];
  }
}

// The importance weight of a kept edge (layer_sample.cpp's contract):
// edge_value, or, when the layer is not exact, edge_value * m_u / (s * p_u).
struct LayerWeight {
  bool fastgcn;
  const double* value;     // per slot, or null (ones)
  int64_t s;
  // LADIES
  const double* q;         // per candidate
  const int64_t* run_of;   // per position: its candidate
  const double* q_total;
  // FastGCN
  const double* cum;
  int64_t num_nodes;
  const int64_t* mult;     // per drawn id: its draws
  __device__ double operator()(int64_t i, int64_t slot, int64_t u,
                               int64_t drawn, const int64_t* counters) const {
    const double v = value != nullptr ? value[slot] : 1.0;
    double p;
    if (!fastgcn) {
      if (s <= 0 || s >= counters[kLive]) return v;  // exact, or nothing drawn
      p = q[run_of[i]] / *q_total;
    } else {
      if (s < 0) return v;
      p = node_importance(cum, u) / cum[num_nodes - 1];
    }
    double scale = static_cast<double>(s) * p;
    if (fastgcn) scale = scale / static_cast<double>(mult[drawn]);
    return p > 0.0 ? v / scale : 0.0;
  }
};

// Kept edge i, at rank[i] - 1 of the layer's outputs: local source and
// target, edge id, weight; the count goes to counters[kKept].
__global__ void kept_edges_kernel(KeptEdge keep, LayerWeight weight,
                                  const int64_t* __restrict__ rank,
                                  const int64_t* __restrict__ tgt,
                                  const int64_t* __restrict__ slot,
                                  const int64_t* __restrict__ edge_id,
                                  int64_t m, int64_t* __restrict__ out_row,
                                  int64_t* __restrict__ out_col,
                                  int64_t* __restrict__ out_edge,
                                  double* __restrict__ out_weight,
                                  int64_t* __restrict__ counters) {
  FS_GRID_STRIDE(i, m) {
    if (rose(rank, i)) {
      const int64_t r = rank[i] - 1;
      const int64_t u = keep.src[i];
      const int64_t drawn =
          keep.fastgcn ? find_sorted(keep.cand, *keep.num_cand, u) : -1;
      out_row[r] = keep.map[u];
      out_col[r] = tgt[i];
      out_edge[r] = edge_id != nullptr ? edge_id[slot[i]] : slot[i];
      out_weight[r] = weight(i, slot[i], u, drawn, counters);
    }
    if (i == m - 1) counters[kKept] = rank[i];
  }
}

#undef FS_GRID_STRIDE

}  // namespace fused
}  // namespace layer
}  // namespace fusesample
