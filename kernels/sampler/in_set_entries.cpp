// fusesample::in_set_entries -- for many node sets at once, the entries of
// each member's adjacency list that lie in the member's own set: the scanned
// half of grouped_induced_edges (FusedShaDowKHopSampler's induced subgraphs).
//
// Contract.
//   ptr [N + 1] int64, nbr [E] int32|int64   adjacency lists (CSC)
//   node [n] int64, group [n] int64          position i: node node[i] of
//                                            set group[i]
//   key [K] int64                            the sets' members, as
//                                            group * num_nodes + node, sorted
//                                            ascending and unique (ShaDow:
//                                            the positions' own keys, K = n;
//                                            a hetero induced subgraph: the
//                                            sampled nodes, scanned per
//                                            (node, edge type) position)
//   set_ptr [G + 1] int64                    set g's members: key positions
//                                            [set_ptr[g], set_ptr[g + 1])
//   skip [n] bool                            positions whose list is not
//                                            scanned (grouped_induced_edges'
//                                            hubs, searched instead)
//   num_nodes                                the key's multiplier
// Returns (nbr_pos, pos, slot) [m] int64: for every entry nbr[slot] of
// position pos's list (slot in [ptr[node[pos]], ptr[node[pos] + 1])) whose
// key group[pos] * num_nodes + nbr[slot] is key[nbr_pos], ordered by pos then
// slot. Deterministic; the devices agree.
//
// Why an op: as tensor ops (grouped_induced_edges before it) every entry of
// every scanned list was materialised a few times over -- its position, slot,
// neighbour, query, search result, hit flag, about a dozen passes over
// 3M entries for a products-like ShaDow batch of 61K positions -- and looked
// up in the whole key. Here a warp walks one list, each lane binary-searches
// its entry in the member's own set only, and hits are counted, then written
// in order: two launches and a scan (one host read of the total).
//
// Checks: shapes, dtypes and devices always; ids (node in [0, N), group in
// [0, G)) on the CPU. The CUDA kernel skips a position whose ids are out of
// range instead of reading out of bounds (the caller passes its own sets).
#include <torch/library.h>

namespace fusesample {

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("in_set_entries(Tensor ptr, Tensor nbr, Tensor node, Tensor group, Tensor key, "
        "Tensor set_ptr, Tensor skip, int num_nodes) -> (Tensor nbr_pos, Tensor pos, "
        "Tensor slot)");
}

}  // namespace fusesample
