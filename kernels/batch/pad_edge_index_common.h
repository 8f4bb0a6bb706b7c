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

// Slot p of the padded edges of a contiguous edge_index [2, E]: its
// (source, target); a pad edge where the block has no edge left, and also
// (flagged `bad`, the id in `bad_id`) where the edge's source is outside
// hops 0..b + 1 or its target outside hop b.
struct PadSlot {
  int64_t src, dst;
  bool bad;
  int64_t bad_id;
};

template <typename index_t>
C10_HOST_DEVICE inline PadSlot pad_slot(const PadHops& k, int64_t p, const index_t* ei,
                                        int64_t E) {
  int b = 0;
  while (b + 1 < k.hops && p >= k.padded_edges[b + 1]) ++b;
  const int64_t slot = p - k.padded_edges[b];
  PadSlot s{k.padded_src[b + 2] - 1, k.padded_dst[b + 1] - 1, false, 0};  // the pad edge
  if (slot >= k.edges[b + 1] - k.edges[b]) return s;
  const int64_t e = k.edges[b] + slot;
  const int64_t u = static_cast<int64_t>(ei[e]), v = static_cast<int64_t>(ei[E + e]);
  const int hu = hop_of(k.src, b + 3, u);
  const int hv = hop_of(k.dst, b + 2, v);
  if (hu < 0 || hv != b) {
    s.bad = true;
    s.bad_id = hu < 0 ? u : v;
    return s;
  }
  s.src = u - k.src[hu] + k.padded_src[hu];
  s.dst = v - k.dst[hv] + k.padded_dst[hv];
  return s;
}

PadHops check_pad_edge_index(const char* op, const at::Tensor& edge_index,
                             at::IntArrayRef edges, at::IntArrayRef padded_edges,
                             at::IntArrayRef src_nodes, at::IntArrayRef padded_src_nodes,
                             at::IntArrayRef dst_nodes, at::IntArrayRef padded_dst_nodes,
                             const at::Tensor& out);

}  // namespace fusesample
