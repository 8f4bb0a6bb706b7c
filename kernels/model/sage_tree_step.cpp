// fusesample::sage_tree's forward and backward as ATen calls (see
// sage_tree_step.h; contract: sage_tree.cpp).
#include <ATen/core/Tensor.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/promote_types.h>
#include "sage_tree_step.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

namespace fusesample {
namespace sage_tree {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> sample_aggregate(
    const at::Tensor& colptr, const at::Tensor& row, const at::Tensor& x,
    const at::Tensor& target, int64_t k, const std::string& reduce, bool replace,
    int64_t rng_seed, int64_t level) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("fusesample::sample_aggregate", "")
                       .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
                           const at::Tensor&, const at::Tensor&, const at::Tensor&,
                           const at::Tensor&, int64_t, c10::string_view, bool,
                           int64_t, int64_t)>();
  return op.call(colptr, row, x, target, k, reduce, replace, rng_seed, level);
}

at::Tensor sample_aggregate_backward(const at::Tensor& grad, const at::Tensor& colptr,
                                     const at::Tensor& row, const at::Tensor& target,
                                     const at::Tensor& nbr, const at::Tensor& arg,
                                     int64_t k, const std::string& reduce,
                                     int64_t num_src) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("fusesample::sample_aggregate_backward", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&,
                                         const at::Tensor&, const at::Tensor&,
                                         const at::Tensor&, const at::Tensor&,
                                         int64_t, c10::string_view, int64_t)>();
  return op.call(grad, colptr, row, target, nbr, arg, k, reduce, num_src);
}

}  // namespace

void check_inputs(const at::Tensor& x, const at::Tensor& seeds,
                  at::TensorList params, const Options& o) {
  TORCH_CHECK(x.dim() == 2 && at::isFloatingType(x.scalar_type()), kOp,
              ": 'x' must be a 2-D floating tensor, got ", x.scalar_type(),
              " of shape ", x.sizes());
  check_1d(kOp, "seeds", seeds);
  check_dtype(kOp, "seeds", seeds, at::kLong);
  check_same_device(kOp, "seeds", seeds, "x", x);
  // (seeds' values: the aggregation op checks them on the CPU and reports
  // them through its error word on CUDA; not here, where torch.compile
  // traces with fake tensors)
  TORCH_CHECK(x.size(0) > 0 || seeds.numel() == 0, kOp,
              ": 'seeds' holds ", seeds.numel(), " ids but 'x' has no rows");
  const size_t L = o.fanouts.size();
  TORCH_CHECK(L >= 1, kOp, ": needs at least one layer");
  for (size_t l = 0; l < L; ++l) {
    TORCH_CHECK(o.fanouts[l] >= (l + 1 == L ? -1 : 0), kOp,
                ": fan-outs must be >= 0 (only the last may be -1), got ",
                at::IntArrayRef(o.fanouts));
  }
  TORCH_CHECK(params.size() == L * o.per_layer(), kOp, ": expected ",
              L * o.per_layer(), " parameters (", o.bias ? "W_l, W_r, b" : "W_l, W_r",
              " per layer) for ", L, " layers, got ", params.size());
  TORCH_CHECK(o.dropout >= 0 && o.dropout < 1, kOp,
              ": 'dropout' must be in [0, 1), got ", o.dropout);
  TORCH_CHECK(at::isFloatingType(o.dtype), kOp,
              ": 'dtype' must be floating, got ", o.dtype);
  int64_t in = x.size(1);
  for (size_t j = 0; j < L; ++j) {
    const at::Tensor& w_l = params[j * o.per_layer()];
    const at::Tensor& w_r = params[j * o.per_layer() + 1];
    TORCH_CHECK(w_l.dim() == 2 && w_l.size(1) == in && w_r.sizes() == w_l.sizes(),
                kOp, ": layer ", j, " expects W_l and W_r of shape [H, ", in,
                "], got ", w_l.sizes(), " and ", w_r.sizes());
    if (o.bias) {
      const at::Tensor& b = params[j * o.per_layer() + 2];
      TORCH_CHECK(b.dim() == 1 && b.size(0) == w_l.size(0), kOp, ": layer ", j,
                  " expects a bias of shape [", w_l.size(0), "], got ", b.sizes());
    }
    for (size_t i = 0; i < o.per_layer(); ++i) {
      check_same_device(kOp, "params", params[j * o.per_layer() + i], "x", x);
    }
    in = w_l.size(0);
  }
}

// The forward; with `state` it keeps what the backward needs.
at::Tensor run_forward(const at::Tensor& x, const at::Tensor& colptr,
                       const at::Tensor& row, const at::Tensor& seeds,
                       at::TensorList params, const Options& o, State* state) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  const size_t L = o.fanouts.size();
  const auto dtype = o.dtype;
  // The tree: level l + 1 is level l's draws; the first layer's
  // aggregations of x over each level's children come out of the same op.
  std::vector<at::Tensor> levels{seeds}, aggs;
  for (size_t l = 0; l < L; ++l) {
    auto [out, nbr, arg] = sample_aggregate(colptr, row, x, levels.back(),
                                            o.fanouts[l], o.aggr, o.replace,
                                            o.rng_seed, static_cast<int64_t>(l));
    if (state) {
      state->target.push_back(levels.back());
      state->nbr.push_back(nbr);
      state->arg.push_back(arg);
    }
    aggs.push_back(cast(out, dtype));
    if (l + 1 < L) levels.push_back(nbr.reshape(-1));
  }
  at::Tensor agg = at::cat(aggs);
  aggs.clear();
  // padded slots read row 0 and get weight 0 from their parents; on CUDA
  // seeds out of range are not checked on the host (a sync per step): the
  // aggregation op reported them in its error word, and the clamp keeps the
  // gather of their root rows in bounds (no device-side assert)
  at::Tensor nodes = at::cat(levels).clamp_(0, x.size(0) - 1);

  TreeShape tree;
  tree.reduce = o.reduce;
  for (size_t l = 0; l + 1 < L; ++l) {
    tree.valid.push_back(levels[l + 1].ge(0).view({levels[l].numel(), o.fanouts[l]}));
    tree.slot.push_back(tree.valid.back().to(dtype));
    tree.fanouts.push_back(o.fanouts[l]);
    if (o.reduce == Reduce::kMean) {
      // 1 / #children in float32 at least (bf16 would bias it by ~0.3%)
      tree.scale.push_back(cast(
          tree.valid.back().sum(1, /*keepdim=*/true).clamp_min(1).reciprocal(),
          at::promote_types(dtype, at::kFloat)));
    }
  }

  const size_t P = o.per_layer();
  at::Tensor w_l = cast(params[0], dtype), w_r = cast(params[1], dtype);
  at::Tensor b = o.bias ? cast(params[2], dtype) : at::Tensor();
  at::Tensor h = gather_linear_forward(agg, x, nodes, w_l, w_r, b);
  if (state) {
    state->x = x;
    state->colptr = colptr;
    state->row = row;
    for (const auto& p : params) state->param_dtype.push_back(p.scalar_type());
    state->agg = agg;
    state->nodes = nodes;
    state->weight = {w_l, w_r};
  }
  for (size_t j = 1; j < L; ++j) {
    // h: pre-activations of levels 0..L-j -> this layer's input
    TreeShape sub = tree.prefix(L - j);
    TreeLayerSaved saved;
    at::Tensor in = tree_layer_input_forward(h, sub, o.dropout,
                                             state ? &saved : nullptr);
    // [W_1 | W_2]: one GEMM over [aggr | root] rows
    at::Tensor w = cast(at::cat({params[j * P], params[j * P + 1]}, 1), dtype);
    h = o.bias ? at::addmm(cast(params[j * P + 2], dtype), in, w.t())
               : at::mm(in, w.t());
    if (state) {
      state->layer_in.push_back(in);
      state->layer.push_back(std::move(saved));
      state->weight.push_back(w);
    }
  }
  if (state) state->tree = std::move(tree);
  return h;
}

std::vector<at::Tensor> run_backward(State& state, const at::Tensor& grad,
                                     const std::vector<bool>& need,
                                     const Options& o, bool copy) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  const size_t L = o.fanouts.size(), P = o.per_layer();
  std::vector<at::Tensor> result(need.size());
  const at::Tensor& x = state.x;
  const bool need_x = need[0];
  auto param_grad = [&](size_t i) { return bool(need[1 + i]); };
  auto param_dtype = [&](size_t i) { return state.param_dtype[i]; };
  at::Tensor g = cast(grad, o.dtype);
  for (size_t j = L - 1; j >= 1; --j) {
    const at::Tensor& in = state.layer_in[j - 1];
    const at::Tensor& w = state.weight[j + 1];
    const int64_t C = in.size(1) / 2;
    if (param_grad(j * P) || param_grad(j * P + 1)) {
      result[1 + j * P] = cast(at::mm(g.t(), in.narrow(1, 0, C)), param_dtype(j * P));
      result[1 + j * P + 1] =
          cast(at::mm(g.t(), in.narrow(1, C, C)), param_dtype(j * P + 1));
    }
    if (o.bias && param_grad(j * P + 2)) {
      result[1 + j * P + 2] = cast(g.sum(0), param_dtype(j * P + 2));
    }
    at::Tensor g_in = at::mm(g, w);
    g = tree_layer_input_backward(g_in, state.tree.prefix(L - j), o.dropout,
                                  state.layer[j - 1], copy);
  }
  const bool need_w = param_grad(0) || param_grad(1);
  GatherLinearGrads first = gather_linear_backward(
      g, state.agg, x, state.nodes, state.weight[0], state.weight[1],
      param_dtype(0), need_w, o.bias && param_grad(2), need_x, need_x);
  result[1] = first.w_l;
  result[2] = first.w_r;
  if (o.bias) result[3] = first.bias;
  if (need_x) {
    // ... plus what reaches x through each level's fused aggregation
    at::Tensor g_x = first.x;
    const int64_t num_src = x.size(0);
    int64_t start = 0;
    for (size_t l = 0; l < L; ++l) {
      const int64_t n = state.target[l].numel();
      at::Tensor g_agg = cast(first.agg.narrow(0, start, n), x.scalar_type());
      g_x.add_(sample_aggregate_backward(
          g_agg, state.colptr, state.row, state.target[l], state.nbr[l],
          state.arg[l], o.fanouts[l], o.aggr, num_src));
      start += n;
    }
    result[0] = g_x;
  }
  return result;
}

}  // namespace sage_tree
}  // namespace fusesample
