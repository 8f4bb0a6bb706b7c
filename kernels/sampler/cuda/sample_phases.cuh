// Device phases of the CUDA neighbour sampler (contract:
// ../neighbor_sample.cpp). Plain CUDA, no ATen, so it compiles on its own.
//
// A batch is a fixed sequence of grid-wide phases, two per hop:
//   seeds   insert the seeds; scan their slot counts -> hop 0's offsets
//   sample  (hop h) fill: a thread per slot of targets that take all their
//           in-edges or draw with replacement; floyd: a warp per target
//           sampled without replacement. Whoever picks a slot's neighbour
//           inserts it into the hash table, atomicMin-ing the slot's global
//           position into the key's `first`. The same phase relabels hop
//           h - 1 (its local ids are final by then).
//   dedup   (hop h) ONE scan over the hop's slots of the pair
//           (first appearance?, the new node's slot count at hop h + 1):
//           its first component gives new nodes their local ids in order of
//           first appearance (what makes CUDA == CPU), its second the next
//           hop's offsets. Both are prefix sums over the same slots, which
//           is why the next hop's count needs no phase of its own.
//   relabel the last hop's out_row.
// Scans are single-pass (decoupled look-back: a tile publishes its
// aggregate, then its inclusive prefix; later tiles add up what their
// predecessors published), so a scan costs no barrier of its own.
// The fused kernel runs the phases in one cooperative launch with a
// grid.sync() between them: 1 + 2 * hops barriers. The per-hop path launches
// each phase as a kernel and reads the next hop's size on the host. Both call
// the functions below, so they compute the same thing.
//
// Load balance (NextDoor's point, by other means): slot-parallel phases give
// every output slot one thread whatever its target's degree, and sampling
// without replacement costs O(k) per target (Floyd), never a scan of a hub's
// neighbour list. Temporal and weighted sampling (segment_rule.h) narrow a
// segment by binary search; weighted draws without replacement cost one
// warp-parallel pass over the segment per target (weighted_topk.cuh).
#pragma once

#include <cooperative_groups.h>
#include <cub/block/block_scan.cuh>
#include <cuda/atomic>

#include <cstdint>

#include "../../common/floyd.cuh"
#include "weighted_topk.cuh"
#include "../../common/rng.h"
#include "../../common/warps.cuh"
#include "../sample_count.h"
#include "../type_counts.h"

namespace fusesample {
namespace cuda_sampler {

constexpr int kThreads = 256;
constexpr int kItems = 4;                       // scan items per thread
constexpr int64_t kTile = kThreads * kItems;    // scan tile
constexpr unsigned long long kEmptyKey = ~0ULL;
constexpr int kMaxHops = 16;

enum Error : int { kOk = 0, kSeedOutOfRange = 1, kOverCapacity = 2 };

struct HashTable {
  unsigned long long* key;  // kEmptyKey when free
  long long* first;         // smallest global slot that inserted the key
  long long* value;         // local id
  uint64_t mask;
};

// A CSC of num_types segments per node (sample_count.h): num_types = 1 for
// a homogeneous graph.
template <typename index_t>
struct Graph {
  const int64_t* colptr;    // [num_nodes * num_types + 1]
  const index_t* row;
  const int64_t* edge_id;   // nullptr: the CSC slot is the edge id
  int64_t num_nodes;
  int64_t num_types;
  SegmentRule rule;         // temporal / weighted sampling (segment_rule.h)
};

// What a scan adds up: (new nodes, slots) for the dedup scan, (slots, -) for
// the seeds' count.
struct Pair {
  int64_t a, b;
};
__device__ __forceinline__ Pair operator+(const Pair& x, const Pair& y) {
  return Pair{x.a + y.a, x.b + y.b};
}
struct PairSum {
  __device__ __forceinline__ Pair operator()(const Pair& x, const Pair& y) const {
    return x + y;
  }
};

// Look-back state of a scan's tiles, shared by every scan of a batch:
// status[t] = 4 * epoch + kind (kind kAggregate: agg[t] is published,
// kInclusive: incl[t] is). Scans of a batch use increasing epochs, so what an
// earlier scan left reads as "nothing yet": one memset per batch suffices.
struct TileState {
  unsigned long long* status;  // [tiles]
  Pair* agg;                   // [tiles]
  Pair* incl;                  // [tiles]
};
enum TileKind : unsigned long long { kAggregate = 1, kInclusive = 2 };

// Output and scratch buffers. out_* are indexed globally (all hops), pos
// hop-locally (0 .. hop edges); `base` (edges of earlier hops) keeps `first`
// global. Until its hop is relabelled, out_row holds the GLOBAL neighbour id
// of each slot: the relabel of hop h - 1 overlaps hop h's draws, so the
// neighbours must live in a buffer that hop h does not write.
struct Buffers {
  int64_t* node;          // [node capacity]
  int64_t* batch;         // [node capacity] or nullptr
  int64_t* out_row;       // [edge capacity] global, then local neighbour id
  int64_t* out_col;
  int64_t* out_edge;
  int64_t* pos;           // [hop edges] Floyd's picks: in-edge positions
  int64_t* offsets;       // [frontier + 1] this hop's scanned slot counts
  int64_t* next_offsets;  // [new nodes + 1] the next hop's, from dedup
  int64_t* totals;        // [2] the last scan's (new nodes, next hop's slots)
  int64_t* meta;          // sizes for the host, see record_hop
  int num_hops;
  TileState tiles;
  unsigned long long* error;  // a kError code, 0 = fine
  // Typed samples (type_counts.h); num_node_types = 0: none.
  const int64_t* node_type_offset;  // [num_node_types + 1]
  const int64_t* edge_type_offset;  // [num_edge_types + 1]
  int64_t num_node_types, num_edge_types;
  int64_t* type_counts;             // in meta, after the error word
  // Capacities: node/batch, out_*, pos (hop slots), offsets (frontier). The
  // fused launch sizes them from bounds that, for typed samples, rest on the
  // caller's edge_type_nodes; a sample that would outgrow them stops with
  // kOverCapacity instead of writing past them.
  int64_t node_cap, edge_cap, hop_edge_cap, frontier_cap;
  double* wkey;           // [hop edges] weighted draws' keys, beside pos
};

// Whether hop h's slots fit; else the batch fails (every thread of the grid
// reads the same sizes, so all take the same branch).
__device__ __forceinline__ bool hop_fits(const Buffers& b, int64_t base,
                                         int64_t edges) {
  if (edges <= b.hop_edge_cap && base + edges <= b.edge_cap) return true;
  atomicExch(b.error, static_cast<unsigned long long>(kOverCapacity));
  return false;
}

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

// ---------------------------------------------------------------- scan --
using StatusRef = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;

// Stores `v` as tile `tile`'s aggregate or inclusive prefix, then releases
// the status that announces it.
__device__ __forceinline__ void publish(const TileState& s, int64_t tile,
                                        unsigned long long epoch, TileKind kind,
                                        Pair v) {
  (kind == kAggregate ? s.agg : s.incl)[tile] = v;
  StatusRef(s.status[tile]).store(4 * epoch + kind, cuda::memory_order_release);
}

__device__ __forceinline__ Pair warp_sum(Pair v) {
  for (int off = 16; off > 0; off >>= 1) {
    v.a += __shfl_xor_sync(0xffffffffu, v.a, off);
    v.b += __shfl_xor_sync(0xffffffffu, v.b, off);
  }
  return v;
}

// The sum of every tile before `tile` (one warp; all its lanes call). Lane i
// waits for tile (window end - i) to publish; the window's nearest inclusive
// prefix ends the walk, otherwise its aggregates are added and the window
// moves 32 tiles back. Tile 0 publishes its inclusive prefix at once, so
// the walk ends, and tiles are taken in increasing order by resident blocks,
// so every awaited tile makes progress.
__device__ __forceinline__ Pair look_back(const TileState& s, int64_t tile,
                                          unsigned long long epoch) {
  const int lane = threadIdx.x & 31;
  Pair sum{0, 0};
  for (int64_t end = tile - 1;; end -= 32) {
    const int64_t t = end - lane;
    unsigned long long st = 0;
    if (t >= 0) {
      StatusRef ref(s.status[t]);
      do {
        st = ref.load(cuda::memory_order_acquire);
      } while (st < 4 * epoch + kAggregate);
    }
    const unsigned inclusive = __ballot_sync(0xffffffffu, st == 4 * epoch + kInclusive);
    const int stop = inclusive ? __ffs(inclusive) - 1 : 32;
    Pair v{0, 0};
    if (t >= 0 && lane <= stop) v = lane == stop ? s.incl[t] : s.agg[t];
    sum = sum + warp_sum(v);
    if (inclusive) return sum;
  }
}

// Single-pass exclusive scan of the n pairs load(i): consume(i, exclusive
// prefix, value) for every i, then finish(total) by one thread (also when
// n == 0). Every thread of the grid calls it with the same arguments.
template <typename Load, typename Consume, typename Finish>
__device__ void scan_pairs(int64_t n, const TileState& s, unsigned long long epoch,
                           Load load, Consume consume, Finish finish) {
  using Scan = cub::BlockScan<Pair, kThreads>;
  __shared__ typename Scan::TempStorage tmp;
  __shared__ Pair tile_prefix;
  const int64_t tiles = (n + kTile - 1) / kTile;
  if (n == 0 && blockIdx.x == 0 && threadIdx.x == 0) finish(Pair{0, 0});
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    Pair vals[kItems];
    Pair sum{0, 0};
    for (int k = 0; k < kItems; ++k) {
      const int64_t i = tile * kTile + threadIdx.x * kItems + k;
      vals[k] = i < n ? load(i) : Pair{0, 0};
      sum = sum + vals[k];
    }
    Pair excl, total;
    Scan(tmp).ExclusiveScan(sum, excl, Pair{0, 0}, PairSum(), total);
    if (threadIdx.x < 32) {
      Pair before{0, 0};
      if (tile == 0) {
        if (threadIdx.x == 0) publish(s, 0, epoch, kInclusive, total);
      } else {
        if (threadIdx.x == 0) publish(s, tile, epoch, kAggregate, total);
        before = look_back(s, tile, epoch);
        if (threadIdx.x == 0) publish(s, tile, epoch, kInclusive, before + total);
      }
      if (threadIdx.x == 0) tile_prefix = before;
    }
    __syncthreads();
    excl = excl + tile_prefix;
    for (int k = 0; k < kItems; ++k) {
      const int64_t i = tile * kTile + threadIdx.x * kItems + k;
      if (i < n) consume(i, excl, vals[k]);
      excl = excl + vals[k];
    }
    if (tile == tiles - 1 && threadIdx.x == 0) finish(tile_prefix + total);
    __syncthreads();  // tmp and tile_prefix serve the next tile
  }
}

// Epochs of a batch's scans: the seeds' count, then each hop's dedup.
__device__ __forceinline__ unsigned long long seed_epoch() { return 1; }
__device__ __forceinline__ unsigned long long dedup_epoch(int64_t hop) { return hop + 2; }

// ----------------------------------------------------------------- hops --
struct Hop {
  int64_t index;   // hop number (RNG key)
  const int64_t* k;  // fan-out per edge type, [num_types] in device memory
  int64_t begin;   // frontier = node[begin, end)
  int64_t end;
  int64_t base;    // edges sampled by earlier hops
  int64_t edges;   // this hop's slot count
};

// Where the host finds the sizes after the batch (one copy):
//   meta[0] = nodes, meta[1] = edges, meta[2 .. 2+L] = num_sampled_nodes,
//   meta[3+L .. 3+2L) = num_sampled_edges, meta[3+2L] = the error code.
__device__ __forceinline__ void record_hop(const Buffers& b, const Hop& h,
                                           int64_t new_nodes) {
  b.meta[2 + h.index + 1] = new_nodes;
  b.meta[3 + b.num_hops + h.index] = h.edges;
  b.meta[0] = h.end + new_nodes;
  b.meta[1] = h.base + h.edges;
}

// Slots of target v, of root seed `root`, at fan-outs k (0 for an id
// outside the graph).
template <typename index_t>
__device__ __forceinline__ int64_t slots(const Graph<index_t>& g, int64_t v,
                                         const int64_t* k, bool replace,
                                         int64_t root) {
  return (v >= 0 && v < g.num_nodes)
             ? target_slots(g.colptr, v, g.num_types, k, replace, g.rule, root) : 0;
}

// A target's root seed (its subtree's, when disjoint; 0 otherwise).
__device__ __forceinline__ int64_t root_of(const Buffers& b, int64_t target) {
  return b.batch ? b.batch[target] : 0;
}

// ---------------------------------------------------------------- seeds --
// Inserts the seeds and, when there is a hop, scans their slot counts at
// fan-outs k0 into offsets (totals[1] = hop 0's slots).
template <typename index_t>
__device__ void phase_seeds(const Graph<index_t>& g, const Params& p,
                            const int64_t* seed, const Buffers& b,
                            const HashTable& t, const int64_t* k0) {
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
  if (r.start == 0) {
    b.meta[0] = p.num_seeds;
    b.meta[2] = p.num_seeds;
  }
  if (b.num_hops == 0) return;
  scan_pairs(
      p.num_seeds, b.tiles, seed_epoch(),
      [&](int64_t i) {
        return Pair{slots(g, seed[i], k0, p.replace, i), 0};
      },
      [&](int64_t i, Pair excl, Pair) { b.offsets[i] = excl.a; },
      [&](Pair total) {
        b.offsets[p.num_seeds] = total.a;
        b.totals[0] = p.num_seeds;
        b.totals[1] = total.a;
      });
}

// --------------------------------------------------------------- sample --
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
  b.out_row[h.base + slot] = u;  // global until the relabel
  b.out_col[h.base + slot] = target;
  b.out_edge[h.base + slot] = g.edge_id ? g.edge_id[e] : e;
  const int64_t bt = b.batch ? b.batch[target] : 0;
  const uint64_t s = table_insert(t, node_key(p, g.num_nodes, bt, u));
  atomicMin(&t.first[s], static_cast<long long>(h.base + slot));
}

// Slots of targets that take all in-edges or draw with replacement: one
// thread each. Targets sampled without replacement are left to phase_floyd.
template <typename index_t>
__device__ void phase_fill(const Graph<index_t>& g, const Params& p,
                           const Hop& h, const Buffers& b, const HashTable& t) {
  GridRange r;
  const int64_t frontier = h.end - h.begin;
  for (int64_t slot = r.start; slot < h.edges; slot += r.stride) {
    const int64_t i = owner(b.offsets, frontier, slot);
    const int64_t target = h.begin + i;
    const SegmentSlot sg = segment_of(g.colptr, b.node[target], g.num_types, h.k,
                                      p.replace, g.rule, root_of(b, target),
                                      slot - b.offsets[i]);
    const int64_t k = h.k[sg.type];
    const int64_t key = draw_key(h.index, g.num_types, sg.type);
    int64_t j;
    if (k < 0 || (!p.replace && k >= sg.degree)) {
      j = sg.slot;
    } else if (p.replace && g.rule.weight_cumsum) {
      j = weighted_draw(p.rng_seed, key, target, sg.slot,
                        g.rule.weight_cumsum + sg.start, sg.degree);
    } else if (p.replace) {
      j = keyed_draw(p.rng_seed, key, target, sg.slot, sg.degree);
    } else {
      continue;  // sampled without replacement: phase_floyd's slot
    }
    resolve_insert(g, p, h, b, t, slot, target, sg.start, j);
  }
}

// Floyd's algorithm, one warp per segment with deg > k: the draws are
// sequential, the membership test over earlier picks is warp-parallel.
template <typename index_t>
__device__ void phase_floyd(const Graph<index_t>& g, const Params& p,
                            const Hop& h, const Buffers& b, const HashTable& t) {
  if (p.replace) return;
  const int lane = threadIdx.x & 31;
  const int64_t warp = global_warp(), warps = warp_count();
  const int64_t frontier = h.end - h.begin;
  for (int64_t i = warp; i < frontier; i += warps) {
    const int64_t target = h.begin + i;
    const int64_t v = b.node[target];
    if (v < 0 || v >= g.num_nodes) continue;  // a bad seed: no slots
    int64_t first_slot = b.offsets[i];
    const int64_t root = root_of(b, target);
    for (int64_t type = 0; type < g.num_types; ++type) {
      const int64_t k = h.k[type];
      const SegmentRange range =
          rule_range(g.colptr, v * g.num_types + type, k, g.rule, root);
      const int64_t start = range.start, d = range.degree;
      if (k >= 0 && d > k) {
        int64_t* picks = b.pos + first_slot;
        const int64_t key = draw_key(h.index, g.num_types, type);
        if (g.rule.weight_cumsum)
          warp_weighted_sample(p.rng_seed, key, target, g.rule.weight_cumsum + start,
                             d, k, picks, b.wkey + first_slot);
        else
          warp_floyd(p.rng_seed, key, target, d, k, picks);
        // The picks are final: the warp resolves them, a lane per slot.
        for (int64_t s = lane; s < k; s += 32)
          resolve_insert(g, p, h, b, t, first_slot + s, target, start, picks[s]);
        __syncwarp();
      }
      first_slot += sample_count(d, k, p.replace);
    }
  }
}

template <typename index_t>
__device__ __forceinline__ unsigned long long slot_key(
    const Graph<index_t>& g, const Params& p, const Hop& h, const Buffers& b,
    int64_t slot) {
  const int64_t bt = b.batch ? b.batch[b.out_col[h.base + slot]] : 0;
  return node_key(p, g.num_nodes, bt, b.out_row[h.base + slot]);
}

// out_row of a hop whose new nodes have their local ids: global -> local,
// in place (a thread per slot).
template <typename index_t>
__device__ void phase_relabel(const Graph<index_t>& g, const Params& p,
                              const Hop& h, const Buffers& b,
                              const HashTable& t) {
  GridRange r;
  for (int64_t slot = r.start; slot < h.edges; slot += r.stride)
    b.out_row[h.base + slot] = t.value[table_find(t, slot_key(g, p, h, b, slot))];
}

// Hop h's draws; relabels `prev` (hop h - 1, edges = 0 for none) on the way:
// it only reads what the dedup before this phase made final.
template <typename index_t>
__device__ void phase_sample(const Graph<index_t>& g, const Params& p,
                             const Hop& h, const Hop& prev, const Buffers& b,
                             const HashTable& t) {
  phase_relabel(g, p, prev, b, t);
  phase_fill(g, p, h, b, t);
  phase_floyd(g, p, h, b, t);
}

// ---------------------------------------------------------------- dedup --
// Local ids for hop h's new nodes (first appearance order) and, if another
// hop follows at fan-outs next_k, its offsets in next_offsets. totals =
// (new nodes, next hop's slots).
template <typename index_t>
__device__ void phase_dedup(const Graph<index_t>& g, const Params& p,
                            const Hop& h, const Buffers& b, const HashTable& t,
                            bool has_next, const int64_t* next_k) {
  scan_pairs(
      h.edges, b.tiles, dedup_epoch(h.index),
      [&](int64_t slot) {
        if (t.first[table_find(t, slot_key(g, p, h, b, slot))] != h.base + slot)
          return Pair{0, 0};
        const int64_t u = b.out_row[h.base + slot];
        return Pair{1, has_next ? slots(g, u, next_k, p.replace,
                                        root_of(b, b.out_col[h.base + slot]))
                                : 0};
      },
      [&](int64_t slot, Pair excl, Pair v) {
        if (!v.a) return;
        const int64_t local = h.end + excl.a;
        if (local >= b.node_cap || excl.a >= b.frontier_cap) {
          atomicExch(b.error, static_cast<unsigned long long>(kOverCapacity));
          return;
        }
        t.value[table_find(t, slot_key(g, p, h, b, slot))] = local;
        b.node[local] = b.out_row[h.base + slot];
        if (b.batch) b.batch[local] = b.batch[b.out_col[h.base + slot]];
        b.next_offsets[excl.a] = excl.b;
      },
      [&](Pair total) {
        if (total.a <= b.frontier_cap) b.next_offsets[total.a] = total.b;
        b.totals[0] = total.a;
        b.totals[1] = total.b;
        record_hop(b, h, total.a);
      });
}

// ---------------------------------------------------------- type counts --
// Nodes per (node type, hop) and edges per (edge type, hop) of the finished
// sample (type_counts.h), into b.type_counts (zeroed with meta). Reads only
// what the last dedup made final (node, out_edge, meta), so it may run beside
// the last relabel. A block histogram in shared memory, then one atomic per
// non-zero bin and block. Every thread of the grid calls it.
__device__ inline void phase_type_counts(const Buffers& b) {
  if (b.num_node_types == 0) return;
  __shared__ unsigned int hist[kMaxTypeCounts];
  const int64_t L = b.num_hops;
  const int64_t bins = type_count_size(b.num_node_types, b.num_edge_types, L);
  for (int64_t j = threadIdx.x; j < bins; j += blockDim.x) hist[j] = 0;
  __syncthreads();
  const int64_t* nsn = b.meta + 2;      // [L + 1]
  const int64_t* nse = b.meta + 3 + L;  // [L]
  GridRange r;
  for (int64_t i = r.start; i < b.meta[0]; i += r.stride) {
    int64_t hop = 0;
    for (int64_t end = nsn[0]; i >= end; end += nsn[++hop]) {}
    const int64_t t = type_of(b.node_type_offset, b.num_node_types + 1, b.node[i]);
    atomicAdd(&hist[t * (L + 1) + hop], 1u);
  }
  const int64_t edge_bins = b.num_node_types * (L + 1);
  for (int64_t e = r.start; e < b.meta[1]; e += r.stride) {
    int64_t hop = 0;
    for (int64_t end = nse[0]; e >= end; end += nse[++hop]) {}
    const int64_t t = type_of(b.edge_type_offset, b.num_edge_types + 1, b.out_edge[e]);
    atomicAdd(&hist[edge_bins + t * L + hop], 1u);
  }
  __syncthreads();
  for (int64_t j = threadIdx.x; j < bins; j += blockDim.x)
    if (hist[j])
      atomicAdd(reinterpret_cast<unsigned long long*>(b.type_counts + j),
                static_cast<unsigned long long>(hist[j]));
}

// The hop after `h`, given its dedup's totals.
__device__ __host__ inline Hop next_hop(const Hop& h, const int64_t* k,
                                        int64_t new_nodes, int64_t edges) {
  return Hop{h.index + 1, k, h.end, h.end + new_nodes, h.base + h.edges, edges};
}

}  // namespace cuda_sampler
}  // namespace fusesample
