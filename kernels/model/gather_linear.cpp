// The first layer of fusesample::sage_tree: [aggr | root] rows of the tree
// times [W_l | W_r] without keeping the gathered root rows x[nodes] alive
// until the backward (they are a cheap re-read of a tensor that stays
// resident). Same computation as pyg_fusesample/nn/gather_linear.py.
#include <ATen/core/Tensor.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros_like.h>
#include "sage_tree_layers.h"

namespace fusesample {
namespace sage_tree {
namespace {

template <typename Body>
void for_each_chunk(int64_t n, Body body) {
  for (int64_t start = 0; start < n; start += kGatherChunkRows) {
    body(start, std::min(kGatherChunkRows, n - start));
  }
}

at::Tensor gathered(const at::Tensor& x, const at::Tensor& nodes, int64_t start,
                    int64_t len, at::ScalarType dtype) {
  return cast(x.index_select(0, nodes.narrow(0, start, len)), dtype);
}

}  // namespace

at::Tensor gather_linear_forward(const at::Tensor& agg, const at::Tensor& x,
                                 const at::Tensor& nodes, const at::Tensor& w_l,
                                 const at::Tensor& w_r, const at::Tensor& bias) {
  const auto dtype = agg.scalar_type();
  at::Tensor z = bias.defined() ? at::addmm(bias, agg, w_l.t())
                                : at::mm(agg, w_l.t());
  const at::Tensor w_r_t = w_r.t();
  for_each_chunk(nodes.numel(), [&](int64_t start, int64_t len) {
    z.narrow(0, start, len).addmm_(gathered(x, nodes, start, len, dtype), w_r_t);
  });
  return z;
}

GatherLinearGrads gather_linear_backward(const at::Tensor& grad,
                                         const at::Tensor& agg,
                                         const at::Tensor& x,
                                         const at::Tensor& nodes,
                                         const at::Tensor& w_l,
                                         const at::Tensor& w_r,
                                         at::ScalarType param_dtype,
                                         bool need_w, bool need_bias,
                                         bool need_agg, bool need_x) {
  const auto dtype = agg.scalar_type();
  GatherLinearGrads g;
  if (need_w) {
    g.w_l = cast(at::mm(grad.t(), agg), param_dtype);
    // The gather again, chunk by chunk; with a 16-bit agg each chunk's
    // product is added in the weight's own precision.
    for_each_chunk(nodes.numel(), [&](int64_t start, int64_t len) {
      at::Tensor part = at::mm(grad.narrow(0, start, len).t(),
                               gathered(x, nodes, start, len, dtype));
      if (g.w_r.defined()) {
        g.w_r.add_(part);
      } else {
        g.w_r = cast(part, param_dtype);
      }
    });
    if (!g.w_r.defined()) g.w_r = at::zeros_like(w_r, w_r.options().dtype(param_dtype));
  }
  if (need_bias) {
    // A [1, N] x [N, H] product: on CUDA, sum(0) over this shape stages
    // ~32 MB in its reduction buffer.
    g.bias = cast(at::mm(at::ones({1, grad.size(0)}, grad.options()), grad).view(-1),
                  param_dtype);
  }
  if (need_agg) g.agg = at::mm(grad, w_l);
  if (need_x) {
    // what autograd does for x[nodes]: repeats accumulate
    at::Tensor rows = cast(at::mm(grad, w_r), x.scalar_type());
    g.x = at::zeros_like(x).index_put_({nodes}, rows, /*accumulate=*/true);
  }
  return g;
}

}  // namespace sage_tree
}  // namespace fusesample
