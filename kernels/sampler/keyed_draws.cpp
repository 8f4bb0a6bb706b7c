// fusesample::keyed_draws -- one hop's draws for given targets under given
// RNG keys, without deduplication: what a rank samples for the frontier
// nodes it owns on behalf of another (distributed sampling, issue 45).
//
// Contract:
//   colptr [n_local + 1] int64, row [E] int32/int64, edge_id [E] int64 or
//     None: a CSC over the targets this process holds (row: global source
//     ids, edge_id: global edge ids; None: the slot index);
//   target [m] int64 in [0, n_local): the local CSC row of each target;
//   key [m] int64: each target's draw key, its position in the requesting
//     batch's node list (fusesample::neighbor_sample's "target position");
//   num_neighbors k >= -1, replace, rng_seed, hop: the hop's fan-out and
//     the batch's RNG seed and hop index (homogeneous graphs: the key's
//     first field is the hop);
//   weight_cumsum [E] float64 or None: weighted draws (neighbor_sample's
//     rule: per-segment prefix sums of positive weights, zero-weight
//     in-edges left out of the CSC), else uniform;
//   edge_time [E] int64 and seed_time [m] int64, or neither: temporal draws
//     (neighbor_sample's rule, segment_rule.h): target i draws only from its
//     in-edges with edge_time <= seed_time[i] (its root seed's time; the
//     CSC's segments sorted by time, checked as read), uniformly or by
//     weight, or with temporal_last the latest k of them. The requester's
//     batch is disjoint (a node's root is one seed), as temporal sampling
//     needs.
//   Returns count [m] int64 (draws per target: min(deg, k), k with
//     replacement when deg > 0, deg for -1; deg: the in-edges the rule
//     admits), row [sum count] int64 (global
//     source ids) and edge [sum count] int64 (global edge ids), targets in
//     order, each target's draws in draw order.
//   rng_seeds [m] int64 or None: target i's RNG seed, in place of rng_seed
//     (requests of several batches in one call, each under its batch's).
// Equivalence: target i's draws are neighbor_sample's draws of the node at
// position key[i] of hop `hop` in a batch sampled with the same rng_seed on
// a CSC whose in-edge list of that node is this one (same order): the same
// keys (common/rng.h) and the same sampling of a segment (floyd.h; with
// weights, sampler/cpu/rule_positions.h over the same prefix sums). So a
// batch assembled from several processes' draws, in the requester's order,
// is the single-process batch, whatever the partitioning.
// Devices: CPU and CUDA, bitwise equal outputs. The CUDA kernel makes one
// host read (the total draws and its error flags, together: the outputs'
// size depends on the data), so it cannot be captured into a CUDA graph; a
// bad target or an unsorted temporal segment is found on the device and
// raises the CPU kernel's message after that read.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "keyed_draws(Tensor colptr, Tensor row, Tensor? edge_id, Tensor target, "
      "Tensor key, int num_neighbors, bool replace, int rng_seed, int hop, "
      "Tensor? weight_cumsum=None, Tensor? edge_time=None, Tensor? seed_time=None, "
      "bool temporal_last=False, Tensor? rng_seeds=None) -> (Tensor count, Tensor row, "
      "Tensor edge)");
}
