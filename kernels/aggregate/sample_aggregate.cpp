// fusesample::sample_aggregate -- sample up to k in-neighbours of each target
// and reduce their feature rows in the same pass (FuseSampleAgg's idea): no
// subgraph, no block tensors, no [E, F] message tensor. The op behind
// FusedSAGEConv and FusedGraphSAGE.
//
// Contract (both devices):
//   inputs   colptr [N_dst+1] int64, row [E] int32/int64 (CSC: the in-edges
//            of each target; sources index rows of x), x [N_src, F] float64/
//            float32/float16/bfloat16, target [T] int64 in [-1, N_dst) (-1 is
//            a padding slot: zero output, no neighbours), num_neighbors k >= -1
//            (-1 = all in-edges), reduce 'sum' | 'mean' | 'max', replace,
//            rng_seed (>= 0: the RNG key; -1: a fresh key from PyTorch's
//            default generator of the device -- on CUDA read in the kernel
//            from the Philox state, so it is safe under CUDA graph capture
//            and advances on every replay), level (separates the draws of
//            tree levels).
//   outputs  out [T, F] (x's dtype, accumulated in float32; float64 stays
//              float64): the reduction over the sampled neighbours' rows; 0
//              for a target without neighbours;
//            nbr [T, k] int64 (k >= 0): the sampled neighbours in draw
//              order, -1 in unused slots -- what the backward replays; [T, 0]
//              for k = -1, whose backward reads the graph itself;
//            arg [T, F] int64 (reduce='max'): the neighbour that gave each
//              maximum (the first in draw order on ties), -1 if none; else
//              [0].
//   sampling without replacement keeps min(deg, k) distinct in-edges (every
//            subset equally likely, Floyd's algorithm: a hub costs O(k));
//            with replacement k uniform draws (none for an isolated node).
//   determinism: draw s of node v is keyed by (rng_seed, level, v, s)
//            (common/rng.h): independent of the target's position, of the
//            thread count and of the device -- the CPU and CUDA kernels pick
//            identical neighbours, and a node met twice at one level draws
//            the same neighbours.
//
// fusesample::sample_aggregate_backward -- the gradient for x, replaying nbr
// (sum/mean), the graph (k = -1) or arg (max). Deterministic on both devices
// and free of float atomics: the CPU kernel owns feature columns per thread;
// the CUDA kernel sorts the (neighbour, target) pairs by neighbour and sums
// each neighbour's run in fixed-size chunks, so a hub sampled by thousands of
// targets is spread over many warps instead of contending on one address.
// For k = -1 on CUDA the pair count is read once from the device (one sync).
//
// Ids out of range: the CPU kernels raise (a 'target' outside [-1, N_dst), a
// source outside [0, N_src)). The CUDA kernel must not synchronise to check
// them, nor assert (that loses the CUDA context): it treats such a target as
// padding and such a source as absent, and records the first bad id in a
// per-device error word that fusesample::sample_aggregate_error(like)
// returns ([2] int64: kind (0 none, 1 target, 2 source), id; reset it to
// zeros after reading). The layers read it asynchronously and raise at a
// later call.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "sample_aggregate(Tensor colptr, Tensor row, Tensor x, Tensor target, "
      "int num_neighbors, str reduce='mean', bool replace=False, "
      "int rng_seed=-1, int level=0) -> (Tensor out, Tensor nbr, Tensor arg)");
  m.def(
      "sample_aggregate_backward(Tensor grad_out, Tensor colptr, Tensor row, "
      "Tensor target, Tensor nbr, Tensor arg, int num_neighbors, str reduce, "
      "int num_src) -> Tensor");
  m.def("sample_aggregate_error(Tensor like) -> Tensor");
}
