// fusesample::sage_tree -- a whole FusedGraphSAGE training forward (the
// sampled tree, every layer, ReLU and dropout) as one op with its backward
// in C++.
//
// Why: the same step written as Python autograd Functions over torch ops is
// host-bound: ~60 launches, each behind Python dispatch and autograd
// bookkeeping, 3.8 ms of host time for ~0.4 ms of GPU work at [15, 10],
// batch 1024, on an H200. Issued from C++ with one autograd node the same
// kernels still took 2.2 ms of host time (ATen dispatch and allocation per
// kernel on that host), hence the CUDA graphs (sage_tree_graphs.cpp).
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
//   outputs  out [B, H_{L-1}] in dtype: the last layer's pre-activations of the
//            seeds. Level l of the tree holds B * k_0 * ... * k_{l-1} slots
//            (-1: empty); layer 1 aggregates x over every level's children
//            with the fused sample_aggregate, layer j > 1 over the tree rows
//            of levels 0..L-j, as FusedGraphSAGE's docstring states;
//            replayed: how the forward ran (0 eager, 1 replayed from a CUDA
//            graph, 2 eager because the recording was busy; the Python
//            wrapper warns about 2).
//   backward exact (the draws are replayed, not redrawn); the saved
//            activations become the gradient in place, so a second backward
//            through one graph raises unless inplace_backward=False.
//   autocast is off inside: the casts are the explicit ones above.
//   replay   on CUDA the op records its kernels in CUDA graphs on the second
//            call with one signature and replays them after
//            (sage_tree_graphs.cpp says when it cannot, and warns where that
//            is a slow path); replay=False issues every kernel eagerly.
#include <torch/autograd.h>
#include <torch/library.h>

#include <c10/core/impl/LocalDispatchKeySet.h>

#include "sage_tree_saved.h"

namespace fusesample {
namespace sage_tree {

std::pair<at::Tensor, c10::intrusive_ptr<Saved>> begin_step(
    const at::Tensor& x, const at::Tensor& colptr, const at::Tensor& row,
    const at::Tensor& seeds, at::TensorList params, const Options& o,
    const std::vector<bool>& need, Replay* how) {
  check_inputs(x, seeds, params, o);
  auto saved = c10::make_intrusive<Saved>();
  saved->options = o;
  saved->num_params = params.size();
  at::Tensor out = replay_forward(x, colptr, row, seeds, params, o, need,
                                  &saved->replayed, how);
  if (!out.defined()) {
    saved->state = c10::make_intrusive<State>();
    out = run_forward(x, colptr, row, seeds, params, o, saved->state.get());
  }
  saved->versions.emplace_back(x, x._version());
  for (const auto& p : params) saved->versions.emplace_back(p, p._version());
  return {out, saved};
}

std::vector<at::Tensor> finish_step(Saved& saved, const at::Tensor& grad,
                                    const std::vector<bool>& need) {
  const Options& o = saved.options;
  TORCH_CHECK(!saved.consumed, kOp,
              ": a second backward through the same graph "
              "(retain_graph=True) needs inplace_backward=False: the first "
              "one turned the saved activations into their gradients");
  for (const auto& [t, version] : saved.versions) {
    TORCH_CHECK(t._version() == version, kOp,
                ": an input (x or a parameter) was modified in place "
                "between the forward and the backward (is optimizer.step() "
                "called before loss.backward()?)");
  }
  if (saved.replayed) {
    std::vector<at::Tensor> inputs;
    for (const auto& v : saved.versions) inputs.push_back(v.first);
    auto g = replay_backward(*saved.replayed, grad, need, o, inputs);
    saved.replayed.reset();  // hands the graph's buffers back
    saved.consumed = true;
    return g;
  }
  auto g = run_backward(*saved.state, grad, need, o, !o.inplace_backward);
  if (o.inplace_backward) {
    saved.state.reset();  // nothing in it is valid any more
    saved.consumed = true;
  }
  return g;
}

Options make_options(at::IntArrayRef num_neighbors, c10::string_view aggr,
                     bool replace, int64_t rng_seed, double dropout,
                     at::ScalarType dtype, bool bias, bool inplace_backward,
                     bool replay) {
  const std::string name(aggr);
  return Options{num_neighbors.vec(), name == "add" ? "sum" : name,
                 parse_reduce(kOp, name), replace, rng_seed, dropout, dtype,
                 bias, inplace_backward, replay};
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// How the calling thread's last forward ran (returned next to the output).
Replay& last_replay() {
  thread_local Replay how = Replay::kEager;
  return how;
}

class SageTreeFunction : public torch::autograd::Function<SageTreeFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x,
                               const at::Tensor& colptr, const at::Tensor& row,
                               const at::Tensor& seeds, at::TensorList params,
                               const Options& o) {
    // sample_aggregate's autograd kernel is Python: go below it
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    std::vector<bool> need{x.requires_grad()};
    for (const auto& p : params) need.push_back(p.requires_grad());
    auto [out, saved] = begin_step(x, colptr, row, seeds, params, o, need,
                                   &last_replay());
    ctx->saved_data["saved"] = c10::IValue::make_capsule(std::move(saved));
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = c10::static_intrusive_pointer_cast<Saved>(
        ctx->saved_data["saved"].toCapsule());
    // x, colptr, row, seeds, every parameter, the options
    variable_list result(4 + saved->num_params + 1);
    if (!grads[0].defined()) return result;
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    std::vector<bool> need{ctx->needs_input_grad(0)};
    for (size_t i = 0; i < saved->num_params; ++i) {
      need.push_back(ctx->needs_input_grad(4 + i));
    }
    std::vector<at::Tensor> g = finish_step(*saved, grads[0], need);
    result[0] = g[0];
    for (size_t i = 0; i < saved->num_params; ++i) result[4 + i] = g[1 + i];
    return result;
  }
};

std::tuple<at::Tensor, int64_t> sage_tree_autograd(const at::Tensor& x, const at::Tensor& colptr,
                              const at::Tensor& row, const at::Tensor& seeds,
                              at::TensorList params, at::IntArrayRef num_neighbors,
                              at::ScalarType dtype, c10::string_view aggr,
                              bool replace, int64_t rng_seed, double dropout,
                              bool bias, bool inplace_backward, bool replay) {
  last_replay() = Replay::kEager;
  at::Tensor out = SageTreeFunction::apply(
      x, colptr, row, seeds, params,
      make_options(num_neighbors, aggr, replace, rng_seed, dropout, dtype, bias,
                   inplace_backward, replay))[0];
  return {out, static_cast<int64_t>(last_replay())};
}

// Below autograd (inference mode): the same forward, eager, nothing saved.
std::tuple<at::Tensor, int64_t> sage_tree_forward_only(const at::Tensor& x, const at::Tensor& colptr,
                                  const at::Tensor& row, const at::Tensor& seeds,
                                  at::TensorList params,
                                  at::IntArrayRef num_neighbors,
                                  at::ScalarType dtype, c10::string_view aggr,
                                  bool replace, int64_t rng_seed, double dropout,
                                  bool bias, bool inplace_backward, bool replay) {
  const Options o = make_options(num_neighbors, aggr, replace, rng_seed, dropout,
                                 dtype, bias, inplace_backward, replay);
  check_inputs(x, seeds, params, o);
  at::Tensor out = run_forward(x, colptr, row, seeds, params, o, nullptr);
  return {out, static_cast<int64_t>(Replay::kEager)};
}

}  // namespace
}  // namespace sage_tree
}  // namespace fusesample

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "sage_tree(Tensor x, Tensor colptr, Tensor row, Tensor seeds, "
      "Tensor[] params, int[] num_neighbors, ScalarType dtype, "
      "str aggr='mean', bool replace=False, int rng_seed=-1, float dropout=0., "
      "bool bias=True, bool inplace_backward=True, bool replay=True) "
      "-> (Tensor out, int replayed)");
}

TORCH_LIBRARY_IMPL(fusesample, Autograd, m) {
  m.impl("sage_tree", &fusesample::sage_tree::sage_tree_autograd);
}

TORCH_LIBRARY_IMPL(fusesample, CompositeExplicitAutograd, m) {
  m.impl("sage_tree", &fusesample::sage_tree::sage_tree_forward_only);
}
