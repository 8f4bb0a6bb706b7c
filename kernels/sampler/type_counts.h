// Per-type sizes of a typed sample (heterogeneous graphs), computed by the
// sampler itself so that the caller learns every size it needs to split the
// sample by node and edge type in the one host read-back of the batch.
//
// With node_type_offsets [NT+1] (node type i owns global ids
// node_type_offsets[i] .. node_type_offsets[i+1]) and edge_type_offsets
// [T+1] (edge type t owns global edge ids likewise), the counts are
//   [NT * (L+1)]  nodes of type i first sampled at hop h (seeds: h = 0),
//                 at i * (L+1) + h;
//   [T * L]       edges of type t sampled at hop h, at NT*(L+1) + t*L + h.
// edge_type_nodes [2T] gives each edge type's (source, target) node types;
// the CUDA sampler sizes its buffers from it (a frontier of type i can only
// draw from the edge types ending at i).
#pragma once

#include <cstdint>

#include "../common/rng.h"

namespace fusesample {

// Enough for, e.g., 16 node types x 4 hops + 64 edge types x 3 hops, and
// small enough to keep as a per-block shared-memory histogram.
constexpr int64_t kMaxTypeCounts = 1024;

FS_HOST_DEVICE int64_t type_count_size(int64_t node_types, int64_t edge_types,
                                       int64_t hops) {
  return node_types == 0 ? 0 : node_types * (hops + 1) + edge_types * hops;
}

// The last i in [0, n) with offsets[i] <= x (offsets ascending, offsets[0] <= x).
FS_HOST_DEVICE int64_t type_of(const int64_t* offsets, int64_t n, int64_t x) {
  int64_t lo = 0, hi = n;
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) >> 1;
    if (offsets[mid] <= x) lo = mid; else hi = mid;
  }
  return lo;
}

}  // namespace fusesample
