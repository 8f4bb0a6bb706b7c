// Temporal and weighted sampling: what narrows a segment's draws beyond its
// fan-out, and how weighted draws are made. Shared by the CPU and CUDA
// samplers (host and device code), so both make the same draws.
//
// Temporal (PyG's time_attr). The graph is built with each segment's in-edges
// sorted by time (`edge_time`: the edge's own time, or its source node's time
// for node-level time attributes). A target may take only in-edges no later
// than its root seed's time, seed_time[root] (temporal sampling is disjoint,
// so every node has a root): a prefix of its segment, found by binary search,
// O(log deg). 'uniform' then samples that prefix as the uniform sampler
// samples a segment; 'last' narrows it to its last k in-edges (all of them
// when k = -1) and takes those: PyG's temporal strategies.
//
// Weighted (PyG's weight_attr). The graph is built without its zero-weight
// in-edges (they are never drawn, not even by k = -1 or k >= deg, so the
// CSC the op reads leaves them out), and `weight_cumsum` holds the
// inclusive prefix sums of the positive weights within each segment
// (float64). A segment's drawable in-edges are all of its in-edges.
//   With replacement: each draw takes u * total and binary-searches the prefix
//   sums (inverse CDF): O(log deg) per draw, never a scan.
//   Without replacement (k < positive in-edges): successive sampling
//   proportional to weight (each pick drawn by weight among the in-edges
//   not yet picked), in two steps that together are exact:
//   1. draws with replacement (as above, attempts s = 0, 1, ...), a repeat
//      rejected -- a draw by weight conditioned on not being a repeat is a
//      draw by weight among the rest -- up to kWeightedAttempts attempts:
//      O(log deg) each, and with weights that are not concentrated on a few
//      in-edges nearly every attempt is a pick;
//   2. if picks are still missing (a few heavy in-edges hold most of the
//      weight, or k is close to deg), the rest of the successive sample
//      among the in-edges not yet picked, as exponential keys
//      (Efraimidis-Spirakis): key_e = -log(U_e) / w_e, the smallest win
//      (ties: the earlier position). One pass over the segment, O(deg),
//      only for such targets (on the GPU a warp, deg / 32 steps).
//   Successive sampling is Markov in the set picked so far, so step 2
//   continuing step 1 is the same distribution. Picks come out in draw
//   order.
// Determinism: U_e and the draws are keyed like the uniform draws (rng.h);
// the logarithm is computed here with +, -, *, / only (det_log), each rounded
// on its own (FS_ADD/FS_MUL/FS_DIV: no fused multiply-add on the GPU), so the
// CPU and CUDA kernels compute bitwise the same keys and pick the same edges.
#pragma once

#include <cstdint>

#include "../common/det_math.h"
#include "../common/rng.h"
#include "../common/weighted_draw.h"


namespace fusesample {

// What narrows the draws; all null/false: uniform sampling.
struct SegmentRule {
  const int64_t* edge_time = nullptr;     // [E] sorted within each segment
  const int64_t* seed_time = nullptr;     // [num seeds], by root
  bool last = false;                      // temporal_strategy == 'last'
  const double* weight_cumsum = nullptr;  // [E] per-segment prefix sums
};

// A segment's drawable in-edges: positions [start, start + degree).
struct SegmentRange {
  int64_t start, degree;
};

FS_HOST_DEVICE SegmentRange rule_range(const int64_t* colptr, int64_t seg,
                                       int64_t k, const SegmentRule& r,
                                       int64_t root) {
  int64_t start = colptr[seg];
  int64_t d = colptr[seg + 1] - start;
  if (r.edge_time != nullptr) {
    const int64_t limit = r.seed_time[root];
    int64_t lo = start, hi = start + d;  // first position later than limit
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (r.edge_time[mid] <= limit) lo = mid + 1; else hi = mid;
    }
    d = lo - start;
    if (r.last && k >= 0 && d > k) {
      start += d - k;
      d = k;
    }
  }
  return SegmentRange{start, d};
}

// Step 1's attempts per target (a multiple of the GPU's 32 lanes).
constexpr int64_t kWeightedAttempts = 128;

// The exponential key of drawable position j of a segment (prefix sums
// `cum`): -log(U_j) / w_j, U_j keyed by (rng_seed, a, b, j + 2^62) -- a
// counter range the attempts of step 1 never use, so keys are independent
// of them. Larger weights give smaller keys.
FS_HOST_DEVICE double weighted_key(uint64_t rng_seed, int64_t a, int64_t b,
                                   int64_t j, const double* cum) {
  const double w = j == 0 ? cum[0] : FS_SUB(cum[j], cum[j - 1]);
  const uint64_t m =
      (random_bits(rng_seed, a, b, static_cast<uint64_t>(j) | (1ULL << 62)) >> 11) + 1;
  return FS_DIV(det_neg_log(m), w);
}

// Key order: smaller key first, the earlier position on a tie.
FS_HOST_DEVICE bool key_before(double ka, int64_t ja, double kb, int64_t jb) {
  return ka < kb || (ka == kb && ja < jb);
}

}  // namespace fusesample
