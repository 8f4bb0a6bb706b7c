// pad_edge_index's argument checks and its per-slot rule, shared by the CPU
// and CUDA kernels (contract: pad_edge_index.cpp).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/macros/Macros.h>

#include <cstdint>

#include "../common/checks.h"

namespace fusesample {

constexpr int kMaxPadHops = 32;

// The cumulative counts, by value (a kernel argument: no device copy).
struct PadHops {
  int64_t edges[kMaxPadHops + 1], padded_edges[kMaxPadHops + 1];
  int64_t src[kMaxPadHops + 2], padded_src[kMaxPadHops + 2];
  int64_t dst[kMaxPadHops + 2], padded_dst[kMaxPadHops + 2];
  int hops;  // L: edge blocks (src has L + 2 entries, dst L + 1 or more)
};

// The hop h (0 <= h < len - 1) with cum[h] <= id < cum[h + 1], or -1.
C10_HOST_DEVICE inline int hop_of(const int64_t* cum, int len, int64_t id) {
  for (int h = 0; h + 1 < len; ++h)
    if (id >= cum[h] && id < cum[h + 1]) return h;
  return -1;
}

// A slot of the padded edges: its (source, target), and whether it stands
// for an edge with a bad id (`bad_id`).
struct PadSlot {
  int64_t src, dst;
  bool bad;
  int64_t bad_id;
};

// Pad edge i of the `count` of block b (see pad_slot).
C10_HOST_DEVICE inline PadSlot pad_edge(const PadHops& k, int b, int64_t i, int64_t count) {
  const int64_t src_real = k.src[b + 2] - k.src[b + 1];
  const int64_t src_pad = k.padded_src[b + 2] - k.padded_src[b + 1] - src_real;
  const int64_t dst_real = k.dst[b + 1] - k.dst[b];
  const int64_t dst_pad = k.padded_dst[b + 1] - k.padded_dst[b] - dst_real;
  return PadSlot{k.padded_src[b + 1] + src_real + i % src_pad,
                 k.padded_dst[b] + dst_real + i * dst_pad / count, false, 0};
}

// Slot p of the padded edges of a contiguous edge_index [2, E]: its
// (source, target); a pad edge where the block has no edge left, and also
// (flagged `bad`, the id in `bad_id`) where the edge's source is outside
// hops 0..b + 1 or its target outside hop b. Pad edge k of block b (of K)
// goes from pad row k mod S of the source type's hop b + 1 to pad row
// floor(k T / K) of the target type's hop b (S, T: those hops' pad rows):
// spread, not all on one row (a row of thousands of slots would be one
// warp's serial walk in the segment kernels), and the targets still sorted.
template <typename index_t>
C10_HOST_DEVICE inline PadSlot pad_slot(const PadHops& k, int64_t p, const index_t* ei,
                                        int64_t E) {
  int b = 0;
  while (b + 1 < k.hops && p >= k.padded_edges[b + 1]) ++b;
  const int64_t slot = p - k.padded_edges[b], real = k.edges[b + 1] - k.edges[b];
  if (slot < real) {
    const int64_t e = k.edges[b] + slot;
    const int64_t u = static_cast<int64_t>(ei[e]), v = static_cast<int64_t>(ei[E + e]);
    const int hu = hop_of(k.src, b + 3, u);
    const int hv = hop_of(k.dst, b + 2, v);
    if (hu >= 0 && hv == b)
      return PadSlot{u - k.src[hu] + k.padded_src[hu], v - k.dst[hv] + k.padded_dst[hv], false,
                     0};
    // (a bad id: the block's first pad edge stands in for it)
    PadSlot s = pad_edge(k, b, 0, 1);
    s.bad = true;
    s.bad_id = hu < 0 ? u : v;
    return s;
  }
  return pad_edge(k, b, slot - real, k.padded_edges[b + 1] - k.padded_edges[b] - real);
}

PadHops check_pad_edge_index(const char* op, const at::Tensor& edge_index,
                             at::IntArrayRef edges, at::IntArrayRef padded_edges,
                             at::IntArrayRef src_nodes, at::IntArrayRef padded_src_nodes,
                             at::IntArrayRef dst_nodes, at::IntArrayRef padded_dst_nodes,
                             const at::Tensor& out);

}  // namespace fusesample
