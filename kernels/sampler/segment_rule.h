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
// Weighted (PyG's weight_attr). The graph is built with each segment's
// zero-weight in-edges last, and `weight_cumsum` holding the inclusive prefix
// sums of the weights within each segment (float64). A segment's drawable
// in-edges are its positive-weight prefix (found by binary search), so
// zero-weight edges are never drawn, not even by k = -1 or k >= deg.
//   With replacement: each draw takes u * total and binary-searches the prefix
//   sums (inverse CDF): O(log deg) per draw, never a scan.
//   Without replacement (k < positive in-edges): successive sampling
//   proportional to weight, as exponential keys (Efraimidis-Spirakis): every
//   drawable in-edge e gets key_e = -log(U_e) / w_e and the k smallest keys
//   win (ties: the earlier position). That is one pass over the segment per
//   TARGET, O(deg) (on the GPU a warp, deg / 32 steps), not per draw; the
//   alternative without a scan -- prefix-sum draws with rejection of repeats
//   -- degrades without bound when a few heavy edges hold most of the weight.
//   The picks come out in key order, i.e. successive-sampling draw order.
// Determinism: U_e and the draws are keyed like the uniform draws (rng.h);
// the logarithm is computed here with +, -, *, / only (det_log), each rounded
// on its own (FS_ADD/FS_MUL/FS_DIV: no fused multiply-add on the GPU), so the
// CPU and CUDA kernels compute bitwise the same keys and pick the same edges.
#pragma once

#include <cstdint>

#include "../common/rng.h"

#if defined(__CUDA_ARCH__)
#define FS_ADD(a, b) __dadd_rn((a), (b))
#define FS_SUB(a, b) __dsub_rn((a), (b))
#define FS_MUL(a, b) __dmul_rn((a), (b))
#define FS_DIV(a, b) __ddiv_rn((a), (b))
#define FS_CLZ64(x) __clzll(static_cast<long long>(x))
#else
#define FS_ADD(a, b) ((a) + (b))
#define FS_SUB(a, b) ((a) - (b))
#define FS_MUL(a, b) ((a) * (b))
#define FS_DIV(a, b) ((a) / (b))
#define FS_CLZ64(x) __builtin_clzll(x)
#endif

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
  } else if (r.weight_cumsum != nullptr && d > 0) {
    const double total = r.weight_cumsum[start + d - 1];
    if (!(total > 0)) return SegmentRange{start, 0};
    int64_t lo = start, hi = start + d - 1;  // first position holding the total
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (r.weight_cumsum[mid] < total) lo = mid + 1; else hi = mid;
    }
    d = lo - start + 1;
  }
  return SegmentRange{start, d};
}

// -log(u) for u = m * 2^-53, m in [1, 2^53]: log(m) by a power-of-two split
// and the atanh series of the mantissa, with separately rounded operations
// only. Accurate to a few ulp; what matters is that it is the same function
// on both devices.
FS_HOST_DEVICE double det_neg_log(uint64_t m) {
  const int e = 63 - FS_CLZ64(m);                             // m = 2^e * f
  double f = static_cast<double>(m) / static_cast<double>(1ULL << e);  // [1, 2), exact
  int ex = e;
  if (f > 1.4142135623730951) {  // keep f in [sqrt(1/2), sqrt(2)]
    f = f * 0.5;  // exact
    ++ex;
  }
  const double s = FS_DIV(FS_SUB(f, 1.0), FS_ADD(f, 1.0));  // |s| <= 0.172
  const double s2 = FS_MUL(s, s);
  double sum = 1.0 / 23.0, term;
  for (int n = 21; n >= 1; n -= 2) {  // Horner over 1/n, n odd
    term = FS_MUL(sum, s2);
    sum = FS_ADD(term, 1.0 / static_cast<double>(n));
  }
  const double log_f = FS_MUL(FS_MUL(2.0, s), sum);
  const double ln2 = 0.6931471805599453;
  // log u = (ex - 53) ln 2 + log f: no cancellation near u = 1 (ex = 53)
  return -FS_ADD(FS_MUL(static_cast<double>(ex - 53), ln2), log_f);
}

// Weighted draw s with replacement over [0, d) of the prefix sums `cum` (the
// segment's, d >= 1 drawable): the first position whose prefix sum exceeds
// u * total.
FS_HOST_DEVICE int64_t weighted_draw(uint64_t rng_seed, int64_t a, int64_t b,
                                     int64_t s, const double* cum, int64_t d) {
  // u in [0, 1): the top 53 bits, exactly
  const double u = static_cast<double>(random_bits(rng_seed, a, b, s) >> 11) * 0x1.0p-53;
  const double r = FS_MUL(u, cum[d - 1]);
  int64_t lo = 0, hi = d - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (cum[mid] > r) hi = mid; else lo = mid + 1;
  }
  return lo;
}

// The exponential key of drawable position j of a segment (prefix sums
// `cum`): -log(U_j) / w_j, U_j keyed by (rng_seed, a, b, j). Larger weights
// give smaller keys; the k smallest are a weighted sample without
// replacement.
FS_HOST_DEVICE double weighted_key(uint64_t rng_seed, int64_t a, int64_t b,
                                   int64_t j, const double* cum) {
  const double w = j == 0 ? cum[0] : FS_SUB(cum[j], cum[j - 1]);
  const uint64_t m = (random_bits(rng_seed, a, b, j) >> 11) + 1;
  return FS_DIV(det_neg_log(m), w);
}

// Key order: smaller key first, the earlier position on a tie.
FS_HOST_DEVICE bool key_before(double ka, int64_t ja, double kb, int64_t jb) {
  return ka < kb || (ka == kb && ja < jb);
}

}  // namespace fusesample
