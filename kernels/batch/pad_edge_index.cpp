// fusesample::pad_edge_index -- a fused loader batch's edge_index (one edge
// type) written into a batch padded to fixed per-hop capacities, the form a
// training step captured once in a CUDA graph replays on
// (pyg_fusesample.sparse.padded_batch, nn.CapturedBatchStep).
//
// A batch holds its nodes hop by hop (hop 0: the seeds) and its edges hop by
// hop: the edges of hop b + 1 read sources of hops <= b + 1 and write targets
// of hop b, grouped by target. The padded batch gives hop h of a node type
// a block of fixed rows (its nodes first, then at least one pad row) and the
// edges of every hop a block of fixed slots (its edges first, then pad edges
// from pad rows of the source type's hop b + 1 to pad rows of the target
// type's hop b: pad rows feed pad rows only, so the real rows compute what
// they computed, and the targets stay grouped). Pad edge i of block b's K
// goes from pad row i mod S of the source hop to pad row floor(i T / K) of
// the target hop (S, T: the hops' pad rows), spread so that no pad row
// becomes a hub (a row of thousands of slots is one warp's serial walk in
// the segment kernels).
//
// pad_edge_index(edge_index, edges, padded_edges, src_nodes, padded_src_nodes,
//                dst_nodes, padded_dst_nodes, out) -> ():
//   edge_index [2, E] int32/int64, local ids (row 0 sources, row 1 targets);
//   edges / padded_edges: cumulative edge counts per hop, [0, E_1, ..., E_L]
//   (E_L = E) and the padded block ends [0, D_1, ..., D_L];
//   src_nodes / padded_src_nodes: cumulative node counts of the source type
//   per hop, [0, n_0, n_0 + n_1, ...] (L + 2 entries, hops 0..L), real and
//   padded; dst_nodes / padded_dst_nodes the same for the target type (at
//   least L + 1 entries);
//   out [2, D_L] of edge_index's dtype and device: every slot written.
//   A hop's padded block must hold its edges and its nodes plus a pad row.
//   bad ids: the CPU kernel raises; the CUDA kernel writes the block's first
//   pad edge for a source or target outside its hop range and reports it in the device's
//   error word (common/error_word.cuh): no sync, nothing out of bounds.
//   Hops are at most kMaxPadHops (32).
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "pad_edge_index(Tensor edge_index, int[] edges, int[] padded_edges, int[] src_nodes, "
      "int[] padded_src_nodes, int[] dst_nodes, int[] padded_dst_nodes, Tensor(a!) out) -> ()");
}
