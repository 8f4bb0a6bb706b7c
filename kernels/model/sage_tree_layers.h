// The two layers of fusesample::sage_tree (sage_tree.cpp) whose backward is
// hand-written to keep a step's transient memory to what the tree needs;
// C++ ports of pyg_fusesample/nn/gather_linear.py and tree_layer_input.py
// (the Python path that torch.compile traces), computing the same values.
// Both run with autocast off: tensors arrive in the step's compute dtype.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "../aggregate/sample_aggregate_common.h"

namespace fusesample {
namespace sage_tree {

// t in dtype without a dispatcher call when it already is (Tensor::to
// would return t itself through the dispatcher: a cost on the hot path, and
// an op may not return an input).
inline at::Tensor cast(const at::Tensor& t, at::ScalarType dtype) {
  return t.scalar_type() == dtype ? t : t.to(dtype);
}

// Rows of x gathered (and cast) at a time by the first layer: 8192 x 100
// float32 features are 3.3 MB of temporaries instead of the whole tree's.
constexpr int64_t kGatherChunkRows = 8192;

// z = agg @ w_l^T + x[nodes].to(agg.dtype) @ w_r^T + bias. The weights are
// already in agg's dtype; the gathered rows are not kept (the backward
// gathers again).
at::Tensor gather_linear_forward(const at::Tensor& agg, const at::Tensor& x,
                                 const at::Tensor& nodes, const at::Tensor& w_l,
                                 const at::Tensor& w_r, const at::Tensor& bias);

struct GatherLinearGrads {
  at::Tensor agg, x, w_l, w_r, bias;  // undefined where not asked for
};

// Gradients of gather_linear_forward for `grad` [N, H] (agg's dtype); the
// weights' and bias' come back in `param_dtype`, x's in x's dtype.
GatherLinearGrads gather_linear_backward(const at::Tensor& grad,
                                         const at::Tensor& agg,
                                         const at::Tensor& x,
                                         const at::Tensor& nodes,
                                         const at::Tensor& w_l,
                                         const at::Tensor& w_r,
                                         at::ScalarType param_dtype,
                                         bool need_w, bool need_bias,
                                         bool need_agg, bool need_x);

// The tree's parent levels as one layer above the first sees them: level i
// has valid[i].size(0) parents, each with fanouts[i] child slots
// (valid[i] [n_i, k_i] bool: false for a padded slot; slot[i] the same as
// 0/1 in the compute dtype, made once for every layer's forward and
// backward), and for 'mean' the 1 / #children of each parent (scale[i]
// [n_i, 1], float32 at least).
struct TreeShape {
  std::vector<at::Tensor> valid, slot;
  std::vector<int64_t> fanouts;
  std::vector<at::Tensor> scale;
  Reduce reduce;

  int64_t num_parents() const;
  int64_t num_rows() const;  // parents + the last level's child slots
  TreeShape prefix(size_t levels) const;  // the first `levels` parent levels
};

// What tree_layer_input_backward needs: the activation (whose sign is the
// ReLU/dropout mask; the backward turns it into the gradient in place) and
// for 'max' the child that gave each maximum, per level with children.
struct TreeLayerSaved {
  at::Tensor h;
  std::vector<at::Tensor> arg;
};

// [aggr_{c in children(v)} h_c | h_v] for every parent row v, [n, 2C], with
// h = dropout(relu(z)) computed in place on z [num_rows, C].
at::Tensor tree_layer_input_forward(at::Tensor z, const TreeShape& tree,
                                    double p, TreeLayerSaved* saved);

// The gradient for z given grad_out [n, 2C]. Overwrites saved.h unless
// `copy` (then the saved activation survives for another backward).
at::Tensor tree_layer_input_backward(const at::Tensor& grad_out,
                                     const TreeShape& tree, double p,
                                     TreeLayerSaved& saved, bool copy);

}  // namespace sage_tree
}  // namespace fusesample
