// The input of a fusesample::sage_tree layer above the first, from the
// previous layer's pre-activations: ReLU (and dropout) in place, then per
// parent [aggr of its children | itself]. Same computation as the ReLU path
// of pyg_fusesample/nn/tree_layer_input.py, whose module docstring explains
// the layout and why the activation doubles as the backward's buffer.
#include <ATen/core/Tensor.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/TensorOperators.h>
#include "sage_tree_layers.h"

#include <limits>

namespace fusesample {
namespace sage_tree {
namespace {

// The [n, k, C] view of the children of the n parents whose level starts at
// row `parent_row`: levels are stacked, so theirs begins where the parents'
// ends.
at::Tensor children_of(const at::Tensor& t, int64_t parent_row, int64_t n,
                       int64_t k) {
  return t.narrow(0, parent_row + n, n * k).view({n, k, t.size(1)});
}

// One parent level's gradient of its aggregations, [n, C], with mean's scale
// applied ('max': zero for parents without children).
at::Tensor parent_grad(const at::Tensor& grad_out, int64_t row,
                       const at::Tensor& valid, const at::Tensor& scale,
                       Reduce reduce) {
  const int64_t C = grad_out.size(1) / 2;
  at::Tensor g = grad_out.narrow(0, row, valid.size(0)).narrow(1, 0, C);
  if (reduce == Reduce::kMax) {
    return g.masked_fill(valid.any(1, /*keepdim=*/true).logical_not(), 0.);
  }
  if (reduce == Reduce::kMean) return cast(g * scale, grad_out.scalar_type());
  return g;
}

}  // namespace

int64_t TreeShape::num_parents() const {
  int64_t n = 0;
  for (const auto& v : valid) n += v.size(0);
  return n;
}

int64_t TreeShape::num_rows() const {
  return num_parents() + (valid.empty() ? 0 : valid.back().numel());
}

TreeShape TreeShape::prefix(size_t levels) const {
  TreeShape t;
  t.valid.assign(valid.begin(), valid.begin() + levels);
  t.slot.assign(slot.begin(), slot.begin() + levels);
  t.fanouts.assign(fanouts.begin(), fanouts.begin() + levels);
  if (!scale.empty()) t.scale.assign(scale.begin(), scale.begin() + levels);
  t.reduce = reduce;
  return t;
}

at::Tensor tree_layer_input_forward(at::Tensor z, const TreeShape& tree,
                                    double p, TreeLayerSaved* saved) {
  const int64_t C = z.size(1), n_parents = tree.num_parents();
  TORCH_INTERNAL_ASSERT(z.size(0) == tree.num_rows(), "sage_tree: layer has ",
                        z.size(0), " rows, the tree ", tree.num_rows());
  z.relu_();
  if (p > 0) {
    z.mul_(at::empty_like(z, z.options().dtype(at::kBool)).bernoulli_(1.0 - p));
    z.mul_(1.0 / (1.0 - p));
  }
  at::Tensor out = at::empty({n_parents, 2 * C}, z.options());
  out.narrow(1, C, C).copy_(z.narrow(0, 0, n_parents));
  int64_t row = 0;  // first row of the current parent level
  for (size_t i = 0; i < tree.valid.size(); ++i) {
    const at::Tensor& v = tree.valid[i];
    const int64_t n = v.size(0), k = tree.fanouts[i];
    at::Tensor children = children_of(z, row, n, k);
    at::Tensor agg = out.narrow(0, row, n).narrow(1, 0, C);
    if (k == 0) {
      agg.zero_();
    } else if (tree.reduce == Reduce::kMax) {
      auto [val, arg] = children
                            .masked_fill(v.unsqueeze(-1).logical_not(),
                                         -std::numeric_limits<double>::infinity())
                            .max(1);
      agg.copy_(val.masked_fill_(v.any(1, /*keepdim=*/true).logical_not(), 0.));
      if (saved) saved->arg.push_back(arg);
    } else {  // a [1, k] x [k, C] product per parent: no [n, k, C] temporary
      at::Tensor total = at::bmm(tree.slot[i].unsqueeze(1), children)
                             .squeeze(1);
      if (tree.reduce == Reduce::kMean) {
        at::mul_out(agg, total, tree.scale[i]);
      } else {
        agg.copy_(total);
      }
    }
    row += n;
  }
  if (saved) saved->h = z;
  return out;
}

at::Tensor tree_layer_input_backward(const at::Tensor& grad_out,
                                     const TreeShape& tree, double p,
                                     TreeLayerSaved& saved, bool copy) {
  // h = relu(z) (times dropout's keep / (1 - p)) becomes its mask in place
  // (sign: 1 where it passed, 0 elsewhere), then each level's rows are
  // multiplied by their upstream gradient: a root's, a child's, or for the
  // middle levels of a deeper tree (children that are parents too) their
  // sum -- the only place a temporary of a level's size is needed.
  at::Tensor grad = (copy ? saved.h.clone() : saved.h).sign_();
  const int64_t C = grad.size(1);
  const at::Tensor roots_grad = grad_out.narrow(1, C, C);
  const int64_t n0 = tree.valid[0].size(0);
  grad.narrow(0, 0, n0).mul_(roots_grad.narrow(0, 0, n0));
  int64_t row = 0;
  size_t next_arg = 0;
  for (size_t i = 0; i < tree.valid.size(); ++i) {
    const at::Tensor& v = tree.valid[i];
    const int64_t n = v.size(0), k = tree.fanouts[i];
    if (k > 0) {
      at::Tensor g = parent_grad(grad_out, row, v,
                                 tree.scale.empty() ? at::Tensor() : tree.scale[i],
                                 tree.reduce);
      at::Tensor children = children_of(grad, row, n, k);
      const bool also_parents = i + 1 < tree.valid.size();
      at::Tensor roots = also_parents ? children_of(roots_grad, row, n, k)
                                      : at::Tensor();
      if (tree.reduce == Reduce::kMax) {
        at::Tensor upstream = at::zeros_like(children).scatter_(
            1, saved.arg[next_arg++].unsqueeze(1), g.unsqueeze(1));
        if (roots.defined()) upstream.add_(roots);
        children.mul_(upstream);
      } else if (roots.defined()) {
        children.mul_(at::addcmul(roots, tree.slot[i].unsqueeze(-1),
                                  g.unsqueeze(1)));
      } else {
        children.mul_(g.unsqueeze(1)).mul_(tree.slot[i].unsqueeze(-1));
      }
    }
    row += n;
  }
  if (p > 0) grad.mul_(1.0 / (1.0 - p));
  return grad;
}

}  // namespace sage_tree
}  // namespace fusesample
