// fusesample::segment_softmax -- an attention softmax over each target's
// slots and its self-loop, and its gradient.
//
// Attention layers (pyg_fusesample.nn.GATConv) normalise a score per slot
// and head over the target's slots (PyG's softmax, with a self-loop per
// target row kept apart: its score is the node's own). Composed of PyTorch
// ops that is a max, a gather, an exponential, a sum, a gather and a divide
// forward and as many backward over [E, heads], a dozen launches; here a
// target's slots are read in place, once per pass.
//
// segment_softmax(ptr, score, self_score) -> (alpha, alpha_self):
//   inputs   ptr [R+1] int64 as segment_aggregate's (row r's slots are
//            ptr[r]:ptr[r+1]); score [E, heads] and self_score [L, heads]
//            (L <= R: rows r < L have a self-loop) of one floating dtype.
//   output   per row r and head h, with m the largest of its slots' scores
//            and its self-loop's (0 where all are -inf or there are none):
//              p = exp(s - m), alpha = p / (sum of the row's p + 1e-16),
//            the self-loop's among them -- PyG's softmax(..., ptr) plus its
//            epsilon, a -inf score weighing 0. Accumulated in float32 for
//            16-bit scores (float64 stays), each row's sum in slot order,
//            the self-loop's last: deterministic.
//
// segment_softmax_backward(ptr, alpha, alpha_self, grad, grad_self)
//     -> (grad_score, grad_self_score):
//   the gradient of the scores for the gradients of alpha / alpha_self:
//     grad_s = alpha * (grad - sum of the row's alpha * grad), per head
//   (the max cancels; as PyG's, where it is detached).
//
//   bad layouts: as segment_aggregate (the CPU kernels raise; the CUDA
//   kernels clamp rows into [0, E] and report them in the error word,
//   without a sync).
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("segment_softmax(Tensor ptr, Tensor score, Tensor self_score) -> (Tensor, Tensor)");
  m.def(
      "segment_softmax_backward(Tensor ptr, Tensor alpha, Tensor alpha_self, Tensor grad, "
      "Tensor grad_self) -> (Tensor, Tensor)");
}
