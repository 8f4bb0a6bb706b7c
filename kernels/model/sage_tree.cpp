// fusesample::sage_tree -- a whole FusedGraphSAGE training forward (the
// sampled tree, every layer, ReLU and dropout) as one op with its backward
// in C++.
//
// Why: the same step written as Python autograd Functions over torch ops is
// host-bound (about 60 launches, each behind Python dispatch and autograd
// bookkeeping: ~2.5 ms of host time for ~0.4 ms of GPU work at [15, 10],
// batch 1024, on an H200). Here the launches are the same, issued from C++
// with one autograd node for the whole model.
//
// Contract (both devices; the ops inside dispatch on x's device):
//   inputs   x [N, F] float features (may require grad: learnable
//            embeddings), colptr/row the CSC of the graph
//            (fusesample::sample_aggregate's), seeds [B] int64,
//            params per layer j: lin_l.weight [H_j, C_j], lin_r.weight
//            [H_j, C_j] and, if `bias`, lin_l.bias [H_j] (C_0 = F,
//            C_j = H_{j-1}), num_neighbors k_0..k_{L-1} (>= 0 but the last,
//            which may be -1: all in-neighbours), aggr 'sum'|'mean'|'max',
//            replace, rng_seed (sample_aggregate's: -1 draws a key per level
//            from the device generator inside the kernel), dropout p in
//            [0, 1), dtype: the compute dtype (autocast's, else x's; inputs
//            and weights are cast to it, weight gradients come back in the
//            weights' dtype).
//   output   [B, H_{L-1}] in dtype: the last layer's pre-activations of the
//            seeds. Level l of the tree holds B * k_0 * ... * k_{l-1} slots
//            (-1: empty); layer 1 aggregates x over every level's children
//            with the fused sample_aggregate, layer j > 1 over the tree rows
//            of levels 0..L-j, as FusedGraphSAGE's docstring states.
//   backward exact (the draws are replayed, not redrawn); the saved
//            activations become the gradient in place, so a second backward
//            through one graph raises unless inplace_backward=False.
//   autocast is off inside: the casts are the explicit ones above.
#include <torch/autograd.h>
#include <torch/library.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "sage_tree_layers.h"

namespace fusesample {
namespace sage_tree {
namespace {

constexpr const char* kOp = "fusesample::sage_tree";

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct Options {
  std::vector<int64_t> fanouts;
  std::string aggr;
  Reduce reduce;
  bool replace;
  int64_t rng_seed;
  double dropout;
  at::ScalarType dtype;
  bool bias;
  bool inplace_backward;
};

// Everything the backward reads, kept in the autograd context as one object
// (released once the backward consumed it).
struct State : torch::CustomClassHolder {
  Options options;
  at::Tensor x, colptr, row;
  int64_t num_params = 0;
  // sample_aggregate's draws per tree level (x's gradient replays them)
  std::vector<at::Tensor> target, nbr, arg;
  at::Tensor agg, nodes;              // the first layer's inputs
  std::vector<at::Tensor> weight;     // per layer, in dtype: [W_l, W_r] for
                                      // layer 0, the stacked [W_l | W_r] above
  std::vector<at::Tensor> layer_in;   // per layer j >= 1: its [n, 2C] input
  std::vector<TreeLayerSaved> layer;  // per layer j >= 1
  TreeShape tree;
  // version counters of x and the parameters at the forward: an in-place
  // change before the backward (optimizer.step() too early) is an error
  std::vector<std::pair<at::Tensor, uint32_t>> versions;
  bool consumed = false;

  // After an in-place backward nothing here is valid any more: free it.
  void release() {
    State empty;
    empty.options = std::move(options);
    empty.consumed = true;
    *this = std::move(empty);
  }
};

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

size_t per_layer(const Options& o) { return o.bias ? 3 : 2; }

void check_inputs(const at::Tensor& x, const at::Tensor& seeds,
                  at::TensorList params, const Options& o) {
  TORCH_CHECK(x.dim() == 2 && at::isFloatingType(x.scalar_type()), kOp,
              ": 'x' must be a 2-D floating tensor, got ", x.scalar_type(),
              " of shape ", x.sizes());
  check_1d(kOp, "seeds", seeds);
  check_dtype(kOp, "seeds", seeds, at::kLong);
  check_same_device(kOp, "seeds", seeds, "x", x);
  const size_t L = o.fanouts.size();
  TORCH_CHECK(L >= 1, kOp, ": needs at least one layer");
  for (size_t l = 0; l < L; ++l) {
    TORCH_CHECK(o.fanouts[l] >= (l + 1 == L ? -1 : 0), kOp,
                ": fan-outs must be >= 0 (only the last may be -1), got ",
                at::IntArrayRef(o.fanouts));
  }
  TORCH_CHECK(params.size() == L * per_layer(o), kOp, ": expected ",
              L * per_layer(o), " parameters (", o.bias ? "W_l, W_r, b" : "W_l, W_r",
              " per layer) for ", L, " layers, got ", params.size());
  TORCH_CHECK(o.dropout >= 0 && o.dropout < 1, kOp,
              ": 'dropout' must be in [0, 1), got ", o.dropout);
  TORCH_CHECK(at::isFloatingType(o.dtype), kOp,
              ": 'dtype' must be floating, got ", o.dtype);
  int64_t in = x.size(1);
  for (size_t j = 0; j < L; ++j) {
    const at::Tensor& w_l = params[j * per_layer(o)];
    const at::Tensor& w_r = params[j * per_layer(o) + 1];
    TORCH_CHECK(w_l.dim() == 2 && w_l.size(1) == in && w_r.sizes() == w_l.sizes(),
                kOp, ": layer ", j, " expects W_l and W_r of shape [H, ", in,
                "], got ", w_l.sizes(), " and ", w_r.sizes());
    if (o.bias) {
      const at::Tensor& b = params[j * per_layer(o) + 2];
      TORCH_CHECK(b.dim() == 1 && b.size(0) == w_l.size(0), kOp, ": layer ", j,
                  " expects a bias of shape [", w_l.size(0), "], got ", b.sizes());
    }
    for (size_t i = 0; i < per_layer(o); ++i) {
      check_same_device(kOp, "params", params[j * per_layer(o) + i], "x", x);
    }
    in = w_l.size(0);
  }
}

// The forward; with `state` it keeps what the backward needs.
at::Tensor run_forward(const at::Tensor& x, const at::Tensor& colptr,
                       const at::Tensor& row, const at::Tensor& seeds,
                       at::TensorList params, const Options& o, State* state) {
  check_inputs(x, seeds, params, o);
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
  // padded slots read row 0 and get weight 0 from their parents
  at::Tensor nodes = at::cat(levels).clamp_min_(0);

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

  const size_t P = per_layer(o);
  at::Tensor w_l = cast(params[0], dtype), w_r = cast(params[1], dtype);
  at::Tensor b = o.bias ? cast(params[2], dtype) : at::Tensor();
  at::Tensor h = gather_linear_forward(agg, x, nodes, w_l, w_r, b);
  if (state) {
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

class SageTreeFunction : public torch::autograd::Function<SageTreeFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x,
                               const at::Tensor& colptr, const at::Tensor& row,
                               const at::Tensor& seeds, at::TensorList params,
                               const Options& o) {
    // sample_aggregate's autograd kernel is Python: go below it
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto state = c10::make_intrusive<State>();
    at::Tensor out = run_forward(x, colptr, row, seeds, params, o, state.get());
    state->options = o;
    state->x = x;
    state->colptr = colptr;
    state->row = row;
    state->num_params = static_cast<int64_t>(params.size());
    state->versions.emplace_back(x, x._version());
    for (const auto& p : params) state->versions.emplace_back(p, p._version());
    ctx->saved_data["state"] = c10::IValue::make_capsule(std::move(state));
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto state = c10::static_intrusive_pointer_cast<State>(
        ctx->saved_data["state"].toCapsule());
    const Options& o = state->options;
    const int64_t num_params = state->num_params;
    // x, colptr, row, seeds, every parameter, the options
    variable_list result(4 + num_params + 1);
    TORCH_CHECK(!state->consumed, kOp,
                ": a second backward through the same graph "
                "(retain_graph=True) needs inplace_backward=False: the first "
                "one turned the saved activations into their gradients");
    for (const auto& [t, version] : state->versions) {
      TORCH_CHECK(t._version() == version, kOp,
                  ": an input (x or a parameter) was modified in place "
                  "between the forward and the backward (is optimizer.step() "
                  "called before loss.backward()?)");
    }
    if (!grads[0].defined()) return result;
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const size_t L = o.fanouts.size(), P = per_layer(o);
    const bool copy = !o.inplace_backward;
    if (o.inplace_backward) state->consumed = true;
    const at::Tensor x = state->x;
    const bool need_x = ctx->needs_input_grad(0);
    auto param_grad = [&](size_t i) { return ctx->needs_input_grad(4 + i); };
    auto param_dtype = [&](size_t i) {
      return state->versions[1 + i].first.scalar_type();
    };

    at::Tensor g = cast(grads[0], o.dtype);
    for (size_t j = L - 1; j >= 1; --j) {
      const at::Tensor& in = state->layer_in[j - 1];
      const at::Tensor& w = state->weight[j + 1];
      const int64_t C = in.size(1) / 2;
      if (param_grad(j * P) || param_grad(j * P + 1)) {
        result[4 + j * P] = cast(at::mm(g.t(), in.narrow(1, 0, C)), param_dtype(j * P));
        result[4 + j * P + 1] =
            cast(at::mm(g.t(), in.narrow(1, C, C)), param_dtype(j * P + 1));
      }
      if (o.bias && param_grad(j * P + 2)) {
        result[4 + j * P + 2] = cast(g.sum(0), param_dtype(j * P + 2));
      }
      at::Tensor g_in = at::mm(g, w);
      g = tree_layer_input_backward(g_in, state->tree.prefix(L - j), o.dropout,
                                    state->layer[j - 1], copy);
    }
    const bool need_w = param_grad(0) || param_grad(1);
    GatherLinearGrads first = gather_linear_backward(
        g, state->agg, x, state->nodes, state->weight[0], state->weight[1],
        param_dtype(0), need_w, o.bias && param_grad(2), need_x, need_x);
    result[4] = first.w_l;
    result[5] = first.w_r;
    if (o.bias) result[6] = first.bias;
    if (need_x) {
      // ... plus what reaches x through each level's fused aggregation
      at::Tensor g_x = first.x;
      const int64_t num_src = x.size(0);
      int64_t start = 0;
      for (size_t l = 0; l < L; ++l) {
        const int64_t n = state->target[l].numel();
        at::Tensor g_agg = cast(first.agg.narrow(0, start, n), x.scalar_type());
        g_x.add_(sample_aggregate_backward(
            g_agg, state->colptr, state->row, state->target[l], state->nbr[l],
            state->arg[l], o.fanouts[l], o.aggr, num_src));
        start += n;
      }
      result[0] = g_x;
    }
    if (o.inplace_backward) state->release();
    return result;
  }
};

Options make_options(at::IntArrayRef num_neighbors, c10::string_view aggr,
                     bool replace, int64_t rng_seed, double dropout,
                     at::ScalarType dtype, bool bias, bool inplace_backward) {
  const std::string name(aggr);
  return Options{num_neighbors.vec(), name == "add" ? "sum" : name,
                 parse_reduce(kOp, name), replace, rng_seed, dropout, dtype,
                 bias, inplace_backward};
}

at::Tensor sage_tree_autograd(const at::Tensor& x, const at::Tensor& colptr,
                              const at::Tensor& row, const at::Tensor& seeds,
                              at::TensorList params, at::IntArrayRef num_neighbors,
                              at::ScalarType dtype, c10::string_view aggr,
                              bool replace, int64_t rng_seed, double dropout,
                              bool bias,
                              bool inplace_backward) {
  return SageTreeFunction::apply(
      x, colptr, row, seeds, params,
      make_options(num_neighbors, aggr, replace, rng_seed, dropout, dtype, bias,
                   inplace_backward))[0];
}

// Below autograd (inference mode): the same forward, nothing saved.
at::Tensor sage_tree_forward_only(const at::Tensor& x, const at::Tensor& colptr,
                                  const at::Tensor& row, const at::Tensor& seeds,
                                  at::TensorList params,
                                  at::IntArrayRef num_neighbors,
                                  at::ScalarType dtype, c10::string_view aggr,
                                  bool replace, int64_t rng_seed, double dropout,
                                  bool bias,
                                  bool inplace_backward) {
  return run_forward(x, colptr, row, seeds, params,
                     make_options(num_neighbors, aggr, replace, rng_seed, dropout,
                                  dtype, bias, inplace_backward),
                     nullptr);
}

}  // namespace
}  // namespace sage_tree
}  // namespace fusesample

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "sage_tree(Tensor x, Tensor colptr, Tensor row, Tensor seeds, "
      "Tensor[] params, int[] num_neighbors, ScalarType dtype, "
      "str aggr='mean', bool replace=False, int rng_seed=-1, float dropout=0., "
      "bool bias=True, bool inplace_backward=True) "
      "-> Tensor");
}

TORCH_LIBRARY_IMPL(fusesample, Autograd, m) {
  m.impl("sage_tree", &fusesample::sage_tree::sage_tree_autograd);
}

TORCH_LIBRARY_IMPL(fusesample, CompositeExplicitAutograd, m) {
  m.impl("sage_tree", &fusesample::sage_tree::sage_tree_forward_only);
}
