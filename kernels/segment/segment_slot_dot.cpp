// fusesample::segment_slot_dot -- the gradient of segment_aggregate in its
// slot weights: per slot, the dot product of its target's output gradient
// and its source's row, per head (an SDDMM over the layout).
//
// Attention layers (pyg_fusesample.nn.GATConv) weigh every slot; the
// gradient of a weight is <grad[dst(s)], x[src(s)]> over the weight's head.
// Computed with PyTorch ops it gathers two [E, F] tensors and reduces them
// (GB per step on a sampled batch); here each slot's rows are read once.
//
// segment_slot_dot(ptr, src, grad, x, heads, reduce) -> out [E, heads]:
//   inputs   ptr [R+1] int64 and src [E] int32/int64 as segment_aggregate's
//            (row r's slots are ptr[r]:ptr[r+1]); grad [R, F] and x [N, F]
//            of one floating dtype, F = heads * C; heads >= 1; reduce
//            'sum' | 'mean' ('mean' scales row r's dots by 1 / its slot
//            count, as segment_aggregate's 'mean' scales its sums).
//   output   out[s, h] = scale(r) * sum_c grad[r, h*C + c] * x[src[s], h*C + c]
//            in x's dtype, accumulated in float32 (float64 stays), each one
//            summed by one thread in a fixed order: deterministic.
//   bad layouts: as segment_aggregate (the CPU kernel raises; the CUDA
//            kernel clamps rows into [0, E], writes 0 for a slot whose
//            source is outside [0, N) and reports both in the error word,
//            without a sync).
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "segment_slot_dot(Tensor ptr, Tensor src, Tensor grad, Tensor x, int heads, "
      "str reduce='sum') -> Tensor");
}
