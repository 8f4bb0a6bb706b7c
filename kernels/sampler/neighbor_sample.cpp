// fusesample::neighbor_sample -- multi-hop neighbour sampling (uniform, temporal
// or weighted) with global deduplication and relabelling, the op behind
// FusedNeighborLoader.
//
// Contract (both devices):
//   inputs   colptr [N+1] int64, row [E] int32/int64 (CSC: in-edges of each
//            target), edge_id [E] int64 or None (global id of each CSC slot;
//            None means the slot index itself), seed [B] int64 in [0, N),
//            num_neighbors [L] each >= -1 (-1 = all in-edges), replace,
//            disjoint, rng_seed, fused (CUDA: all hops in one launch; the
//            CPU kernel ignores it), num_edge_types T >= 1.
//   typed    (heterogeneous graphs) with T > 1, colptr is [N*T+1]: segment
//            v*T+t holds node v's in-edges of edge type t, and num_neighbors
//            is [L*T], hop-major (hop h's fan-out for type t at h*T+t). A
//            target's draws are its segments' draws, segment after segment;
//            every count below is over nodes (N) and hops (L). T = 1 is the
//            plain CSC, and its draws are the same as without the argument.
//            With node_type_offsets / edge_type_offsets / edge_type_nodes
//            (type_counts.h) the op also counts the sample's nodes per (node
//            type, hop) and edges per (edge type, hop): `type_counts`, so a
//            caller can split the sample by type with no further host read.
//   outputs  node [n] int64: global ids, seeds first (in the given order),
//              then each hop's new nodes in order of first appearance --
//              grouped by hop, unique (per subtree when disjoint);
//            row, col [m] int64: local ids of (sampled neighbour, target),
//              grouped by hop, targets in node order, neighbours in draw order;
//            edge [m] int64: global edge id of each sampled edge;
//            batch [n] int64: seed index of each node when disjoint, else [0];
//            num_sampled_nodes [L+1], num_sampled_edges [L], type_counts
//              [NT*(L+1) + T*L] (empty unless typed) int64, always on the
//              CPU (the CUDA kernel reads them in its one sync).
//   sampling without replacement keeps min(deg, k) distinct in-edges, every
//            subset equally likely (Floyd's algorithm); with replacement k
//            independent uniform draws (none for an isolated node).
//   temporal (edge_time [E] int64 per CSC slot, sorted within each segment;
//            seed_time [B] int64; needs disjoint): a target draws only from
//            in-edges with edge_time <= its root seed's seed_time, uniformly,
//            or with temporal_last its latest k of them (segment_rule.h).
//   weighted (weight_cumsum [E] float64, per-segment inclusive prefix sums of
//            positive weights; a CSC without zero-weight in-edges): draws
//            proportional to weight, with replacement by inverse CDF,
//            without by successive sampling (segment_rule.h). With
//            edge_time too (both from one CSC: its segments sorted by time,
//            weight_cumsum the prefix sums in that order), the in-edges the
//            time rule admits are drawn from by weight; with temporal_last the
//            latest k of them are taken (no draws), and replace is refused.
//   devices  every tensor on one device; or, on CUDA, the graph (colptr,
//            row, edge_id, edge_time, weight_cumsum) contiguous in pinned
//            host memory and seed (and seed_time) on the GPU: the kernels
//            read the graph in place through unified addressing (graphs
//            larger than the GPU), the outputs are on the GPU. A temporal
//            sample needs edge_time and seed_time on one device, so it
//            cannot read a host graph.
//   determinism: draws are keyed by (rng_seed, hop * T + t, target position,
//            slot) (common/rng.h), so the output is a pure function of the inputs,
//            independent of thread count, and the CPU and CUDA kernels agree.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "neighbor_sample(Tensor colptr, Tensor row, Tensor? edge_id, "
      "Tensor seed, int[] num_neighbors, bool replace=False, "
      "bool disjoint=False, int rng_seed=0, bool fused=True, "
      "int num_edge_types=1, int[] node_type_offsets=[], "
      "int[] edge_type_offsets=[], int[] edge_type_nodes=[], "
      "Tensor? edge_time=None, Tensor? seed_time=None, bool temporal_last=False, "
      "Tensor? weight_cumsum=None) -> (Tensor node, "
      "Tensor row, Tensor col, Tensor edge, Tensor batch, "
      "Tensor num_sampled_nodes, Tensor num_sampled_edges, Tensor type_counts)");
  // The same sample, not waited for (the loader enqueues batch i+1 behind
  // batch i's training step and reads it one step later):
  //   node, row, col, edge, batch  buffers whose first n (nodes) or m
  //            (edges) entries become the outputs above;
  //   meta     [4 + 2L + C] int64 on the CPU: n, m, num_sampled_nodes [L+1],
  //            num_sampled_edges [L], error (0; 1: a seed id out of range; 2:
  //            edge_type_nodes that do not describe the graph), type_counts [C].
  //            On CUDA it is pinned and filled by the current stream: read it
  //            (and the buffers) only once the stream has passed this call,
  //            e.g. after synchronising an event recorded right after it.
  // CUDA samples with the fused launch (the per-hop path, for -1 fan-outs,
  // synchronises per hop); the CPU kernel completes before returning.
  m.def(
      "neighbor_sample_async(Tensor colptr, Tensor row, Tensor? edge_id, "
      "Tensor seed, int[] num_neighbors, bool replace=False, "
      "bool disjoint=False, int rng_seed=0, int num_edge_types=1, "
      "int[] node_type_offsets=[], int[] edge_type_offsets=[], "
      "int[] edge_type_nodes=[], Tensor? edge_time=None, Tensor? seed_time=None, "
      "bool temporal_last=False, Tensor? weight_cumsum=None) -> (Tensor node, "
      "Tensor row, Tensor col, "
      "Tensor edge, Tensor batch, Tensor meta)");
}
