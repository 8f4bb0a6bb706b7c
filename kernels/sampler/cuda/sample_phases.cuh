// Device phases of the CUDA neighbour sampler (contract:
// ../neighbor_sample.cpp). Plain CUDA, no ATen, so it compiles on its own.
//
// One hop is a fixed sequence of grid-wide phases:
//   count+reduce | scan apply                 -> offsets of each target's slots
//   fill (all / with-replacement slots, a thread each) + floyd (a warp per
//        target sampled without replacement): each slot's neighbour and edge
//        id are read and inserted into the hash table by whoever picked it,
//        atomicMin-ing the slot's global position into the key's `first`
//   flag+reduce | scan apply+assign          -> new nodes get local ids
//                   in order of first appearance (what makes CUDA == CPU)
//   relabel: out_row from the table (overlaps the next hop's count)
// The fused kernel runs every phase of every hop in one cooperative launch
// with grid.sync() between phases; the per-hop path launches each phase as a
// kernel. Both call the functions below, so they compute the same thing.
//
// Load balance (NextDoor's point, by other means): slot-parallel phases give
// every output slot one thread whatever its target's degree, and sampling
// without replacement costs O(k) per target (Floyd), never a scan of a hub's
// neighbour list.
#pragma once

#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "../../common/floyd.cuh"
#include "../../common/rng.h"
#include "../sample_count.h"

namespace fusesample {
namespace cuda_sampler {

constexpr int kThreads = 256;
constexpr int kItems = 4;                       // scan items per thread
constexpr int64_t kTile = kThreads * kItems;    // scan tile
constexpr unsigned long long kEmptyKey = ~0ULL;
constexpr int kMaxHops = 16;

enum Error : int { kOk = 0, kSeedOutOfRange = 1 };

struct HashTable {
  unsigned long long* key;  // kEmptyKey when free
  long long* first;         // smallest global slot that inserted the key
  long long* value;         // local id
  uint64_t mask;
};

template <typename index_t>
struct Graph {
  const int64_t* colptr;
  const index_t* row;
  const int64_t* edge_id;   // nullptr: the CSC slot is the edge id
  int64_t num_nodes;
};

// Output and scratch buffers. Edge-indexed arrays are indexed hop-locally
// (0 .. hop edges); `base` (edges of earlier hops) keeps `first` global.
struct Buffers {
  int64_t* node;       // [node capacity]
  int64_t* batch;      // [node capacity] or nullptr
  int64_t* out_row;    // hop-local views
  int64_t* out_col;
  int64_t* out_edge;
  int64_t* pos;        // [hop edges] position in the target's in-edge list
  int64_t* nbr;        // [hop edges] global neighbour id
  int64_t* offsets;    // [frontier + 1] scanned slot counts
  int64_t* flags;      // [hop edges + 1] scanned first-appearance flags
  int64_t* partials;   // [scan tiles] scan scratch
  unsigned long long* error;  // a kError code, 0 = fine
};

struct Params {
  int64_t num_seeds;
  uint64_t rng_seed;
  bool replace;
  bool disjoint;
};

__device__ __forceinline__ unsigned long long node_key(const Params& p,
                                                       int64_t num_nodes,
                                                       int64_t batch,
                                                       int64_t v) {
  return static_cast<unsigned long long>(p.disjoint ? batch * num_nodes + v : v);
}

__device__ __forceinline__ uint64_t table_insert(const HashTable& t,
                                                 unsigned long long key) {
  for (uint64_t i = mix64(key) & t.mask;; i = (i + 1) & t.mask) {
    const unsigned long long prev = atomicCAS(&t.key[i], kEmptyKey, key);
    if (prev == kEmptyKey || prev == key) return i;
  }
}

__device__ __forceinline__ uint64_t table_find(const HashTable& t,
                                               unsigned long long key) {
  for (uint64_t i = mix64(key) & t.mask;; i = (i + 1) & t.mask)
    if (t.key[i] == key) return i;  // callers only look up inserted keys
}

// Grid-stride iteration shared by both launch modes.
struct GridRange {
  int64_t start, stride;
  __device__ GridRange()
      : start(static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x),
        stride(static_cast<int64_t>(gridDim.x) * blockDim.x) {}
};

// ---------------------------------------------------------------- seeds --
template <typename index_t>
__device__ void phase_seeds(const Graph<index_t>& g, const Params& p,
                            const int64_t* seed, const Buffers& b,
                            const HashTable& t) {
  GridRange r;
  for (int64_t i = r.start; i < p.num_seeds; i += r.stride) {
    const int64_t v = seed[i];
    b.node[i] = v;
    if (b.batch) b.batch[i] = i;
    if (v < 0 || v >= g.num_nodes) {
      atomicExch(b.error, static_cast<unsigned long long>(kSeedOutOfRange));
      continue;  // never read its (nonexistent) in-edges
    }
    const uint64_t s = table_insert(t, node_key(p, g.num_nodes, i, v));
    atomicMin(&t.first[s], -1LL);           // seeds are never "new"
    atomicMin(&t.value[s], static_cast<long long>(i));  // first copy wins
  }
}

// --------------------------------------------------------------- scans --
// Exclusive scan of n values produced by `load(i)` into out[0..n), total in
// out[n]. Two grid-wide phases: per-tile reduce into `partials`, then per-tile
// scan + `consume(i, exclusive, value)`, where each block sums the totals of
// the tiles before its own (a few hundred values, read coalesced) instead of
// waiting for a separate scan of the totals -- one grid barrier fewer.
template <typename Load>
__device__ void scan_reduce(int64_t n, int64_t* out, int64_t* partials,
                            Load load) {
  using Reduce = cub::BlockReduce<int64_t, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const int64_t tiles = (n + kTile - 1) / kTile;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    int64_t sum = 0;
    for (int k = 0; k < kItems; ++k) {
      const int64_t i = tile * kTile + threadIdx.x * kItems + k;
      if (i < n) {
        const int64_t v = load(i);
        out[i] = v;
        sum += v;
      }
    }
    const int64_t total = Reduce(tmp).Sum(sum);
    if (threadIdx.x == 0) partials[tile] = total;
    __syncthreads();
  }
}

template <typename Consume>
__device__ void scan_apply(int64_t n, int64_t* out, const int64_t* partials,
                           Consume consume) {
  using Scan = cub::BlockScan<int64_t, kThreads>;
  using Reduce = cub::BlockReduce<int64_t, kThreads>;
  __shared__ typename Scan::TempStorage tmp;
  __shared__ typename Reduce::TempStorage reduce_tmp;
  __shared__ int64_t tile_offset;
  const int64_t tiles = (n + kTile - 1) / kTile;
  if (n == 0 && blockIdx.x == 0 && threadIdx.x == 0) out[0] = 0;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    int64_t before = 0;
    for (int64_t t = threadIdx.x; t < tile; t += kThreads) before += partials[t];
    before = Reduce(reduce_tmp).Sum(before);
    if (threadIdx.x == 0) tile_offset = before;
    __syncthreads();
    int64_t vals[kItems];
    int64_t sum = 0;
    for (int k = 0; k < kItems; ++k) {
      const int64_t i = tile * kTile + threadIdx.x * kItems + k;
      vals[k] = i < n ? out[i] : 0;
      sum += vals[k];
    }
    int64_t excl, tile_total;
    Scan(tmp).ExclusiveSum(sum, excl, tile_total);
    excl += tile_offset;
    if (tile == tiles - 1 && threadIdx.x == 0) out[n] = tile_offset + tile_total;
    for (int k = 0; k < kItems; ++k) {
      const int64_t i = tile * kTile + threadIdx.x * kItems + k;
      if (i < n) {
        out[i] = excl;
        consume(i, excl, vals[k]);
      }
      excl += vals[k];
    }
    __syncthreads();
  }
}

// ----------------------------------------------------- per-hop phases --
struct Hop {
  int64_t index;   // hop number (RNG key)
  int64_t k;       // fan-out
  int64_t begin;   // frontier = node[begin, end)
  int64_t end;
  int64_t base;    // edges sampled by earlier hops
  int64_t edges;   // this hop's slot count (known after the offsets scan)
};

template <typename index_t>
__device__ __forceinline__ int64_t degree(const Graph<index_t>& g, int64_t v) {
  return (v >= 0 && v < g.num_nodes) ? g.colptr[v + 1] - g.colptr[v] : 0;
}

template <typename index_t>
__device__ void phase_count_reduce(const Graph<index_t>& g, const Params& p,
                                   const Hop& h, const Buffers& b) {
  scan_reduce(h.end - h.begin, b.offsets, b.partials, [&](int64_t i) {
    return sample_count(degree(g, b.node[h.begin + i]), h.k, p.replace);
  });
}

__device__ inline void phase_offsets_apply(const Hop& h, const Buffers& b) {
  scan_apply(h.end - h.begin, b.offsets, b.partials,
             [](int64_t, int64_t, int64_t) {});
}

// The last i with offsets[i] <= slot: the target that owns `slot`.
__device__ __forceinline__ int64_t owner(const int64_t* offsets, int64_t n,
                                         int64_t slot) {
  int64_t lo = 0, hi = n;  // invariant: offsets[lo] <= slot < offsets[hi]
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) >> 1;
    if (offsets[mid] <= slot) lo = mid; else hi = mid;
  }
  return lo;
}

// Slots of targets that take all in-edges or draw with replacement: one
// thread each. Targets sampled without replacement are left to phase_floyd.
// Reads the neighbour behind in-edge position `j` of `target`, records the
// slot and inserts the neighbour (first position wins via atomicMin).
template <typename index_t>
__device__ __forceinline__ void resolve_insert(const Graph<index_t>& g,
                                               const Params& p, const Hop& h,
                                               const Buffers& b,
                                               const HashTable& t, int64_t slot,
                                               int64_t target, int64_t start,
                                               int64_t j) {
  const int64_t e = start + j;
  const int64_t u = static_cast<int64_t>(g.row[e]);
  b.out_col[slot] = target;
  b.nbr[slot] = u;
  b.out_edge[slot] = g.edge_id ? g.edge_id[e] : e;
  const int64_t bt = b.batch ? b.batch[target] : 0;
  const uint64_t s = table_insert(t, node_key(p, g.num_nodes, bt, u));
  atomicMin(&t.first[s], static_cast<long long>(h.base + slot));
}

template <typename index_t>
__device__ void phase_fill(const Graph<index_t>& g, const Params& p,
                           const Hop& h, const Buffers& b, const HashTable& t) {
  GridRange r;
  const int64_t frontier = h.end - h.begin;
  for (int64_t slot = r.start; slot < h.edges; slot += r.stride) {
    const int64_t i = owner(b.offsets, frontier, slot);
    const int64_t target = h.begin + i;
    const int64_t v = b.node[target];
    const int64_t start = g.colptr[v];
    const int64_t d = g.colptr[v + 1] - start;
    const int64_t s = slot - b.offsets[i];
    int64_t j;
    if (h.k < 0 || (!p.replace && h.k >= d)) {
      j = s;
    } else if (p.replace) {
      j = static_cast<int64_t>(uniform_below(
          random_bits(p.rng_seed, h.index, target, s), static_cast<uint64_t>(d)));
    } else {
      continue;  // sampled without replacement: phase_floyd's slot
    }
    resolve_insert(g, p, h, b, t, slot, target, start, j);
  }
}

// Floyd's algorithm, one warp per target with deg > k: the draws are
// sequential, the membership test over earlier picks is warp-parallel.
template <typename index_t>
__device__ void phase_floyd(const Graph<index_t>& g, const Params& p,
                            const Hop& h, const Buffers& b, const HashTable& t) {
  if (h.k < 0 || p.replace) return;
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  const int64_t frontier = h.end - h.begin;
  for (int64_t i = warp; i < frontier; i += warps) {
    const int64_t target = h.begin + i;
    const int64_t v = b.node[target];
    const int64_t d = degree(g, v);
    if (d <= h.k) continue;
    const int64_t first_slot = b.offsets[i];
    int64_t* picks = b.pos + first_slot;
    warp_floyd(p.rng_seed, h.index, target, d, h.k, picks);
    // The picks are final: the warp resolves them, a lane per slot.
    const int64_t start = g.colptr[v];
    for (int64_t s = lane; s < h.k; s += 32)
      resolve_insert(g, p, h, b, t, first_slot + s, target, start, picks[s]);
    __syncwarp();
  }
}

template <typename index_t>
__device__ __forceinline__ unsigned long long slot_key(
    const Graph<index_t>& g, const Params& p, const Buffers& b, int64_t slot) {
  const int64_t bt = b.batch ? b.batch[b.out_col[slot]] : 0;
  return node_key(p, g.num_nodes, bt, b.nbr[slot]);
}

template <typename index_t>
__device__ void phase_flag_reduce(const Graph<index_t>& g, const Params& p,
                                  const Hop& h, const Buffers& b,
                                  const HashTable& t) {
  scan_reduce(h.edges, b.flags, b.partials, [&](int64_t slot) -> int64_t {
    return t.first[table_find(t, slot_key(g, p, b, slot))] == h.base + slot;
  });
}

template <typename index_t>
__device__ void phase_flag_apply_assign(const Graph<index_t>& g,
                                        const Params& p, const Hop& h,
                                        const Buffers& b, const HashTable& t) {
  scan_apply(h.edges, b.flags, b.partials,
             [&](int64_t slot, int64_t rank, int64_t is_first) {
               if (!is_first) return;
               const int64_t local = h.end + rank;
               const unsigned long long key = slot_key(g, p, b, slot);
               t.value[table_find(t, key)] = local;
               b.node[local] = b.nbr[slot];
               if (b.batch) b.batch[local] = b.batch[b.out_col[slot]];
             });
}

template <typename index_t>
__device__ void phase_relabel(const Graph<index_t>& g, const Params& p,
                              const Hop& h, const Buffers& b,
                              const HashTable& t) {
  GridRange r;
  for (int64_t slot = r.start; slot < h.edges; slot += r.stride)
    b.out_row[slot] = t.value[table_find(t, slot_key(g, p, b, slot))];
}

}  // namespace cuda_sampler
}  // namespace fusesample
