// fusesample::skipgram_loss -- the loss of torch_geometric.nn.Node2Vec
// (skip-gram with negative sampling) over a table of embeddings, without
// materialising a row per pair.
//
// Contract: h [U, D] (float64/32/16, bfloat16): the embeddings of the nodes
// the windows name; pos [Wp, Cp] and neg [Wn, Cn] int64 rows of h, one
// window a row, column 0 its start, the rest its context. Returns the 0-dim
//   -mean over pos pairs of log(sigmoid(<h_u, h_v>) + eps)
//   -mean over neg pairs of log(1 - sigmoid(<h_u, h_v>) + eps)
// (pairs: (row[0], row[j]) for j >= 1), in h's dtype, accumulated in float
// (double for float64). PyG's loss gathers a [W * (C - 1), D] copy of h per
// group, and its backward a sparse gradient of as many rows; this reads
// each row in place and scatters the gradient into [U, D].
// With check_index=True ids outside [0, U) raise (on CUDA a host sync);
// False: the caller guarantees the range (FusedNode2Vec passes the inverse
// of a torch.unique).
//
// fusesample::skipgram_loss_backward(grad, h, pos, neg, eps) -> [U, D]: the
// gradient of the loss times the 0-dim grad (read on the device: no sync).
// On CUDA it accumulates with atomics (the order of the float additions,
// and so the last bits, may vary between runs); the forward's sums are
// fixed-order.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("skipgram_loss(Tensor h, Tensor pos, Tensor neg, float eps=1e-15, "
        "bool check_index=True) -> Tensor");
  m.def("skipgram_loss_backward(Tensor grad, Tensor h, Tensor pos, Tensor neg, "
        "float eps=1e-15) -> Tensor");
}
