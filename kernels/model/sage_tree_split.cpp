// fusesample::sage_tree_begin / sage_tree_finish -- the sage_tree step as a
// forward op and a backward op, for torch.compile.
//
// Why: traced through, sage_tree's C++ autograd dissolves into ~50 ATen
// calls that a compiled graph issues one by one (its step was 3-4x the
// CUDA-graph one); and a compiled graph cannot hold the autograd node's
// C++ state. Split in two opaque ops (registered as custom ops with
// autograd in pyg_fusesample/nn/sage_tree_compiled.py), the compiled step
// calls the same code as the eager one, CUDA-graph replay included.
//
// Contract:
//   sage_tree_begin  sage_tree's inputs (same meanings) plus `need`, which
//                    of [x, params...] will want a gradient -> (out, handle,
//                    replayed): out as sage_tree's; handle a CPU int64 [1]
//                    tensor that owns the step's saved state (freed with it:
//                    a step without a backward leaks nothing); replayed as
//                    sage_tree's second output.
//   sage_tree_finish (grad, handle, need) -> the gradients of the inputs
//                    flagged in `need`, in the order of [x, params...] (only
//                    those). Consumes the state unless inplace_backward was
//                    false: a second call on such a handle raises, as does a
//                    handle that is not a live one.
// Autograd: neither op has any (the Python registration supplies it);
// both run below it.
#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>
#include <torch/library.h>

#include <mutex>
#include <unordered_set>

#include "sage_tree_saved.h"

namespace fusesample {
namespace sage_tree {
namespace {

constexpr const char* kSplit = "fusesample::sage_tree_finish";

// The Saved objects some live handle owns: a handle is trusted only if its
// address is here (a forged or stale one gets an error, not a crash).
std::mutex& live_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<const Saved*>& live() {
  static std::unordered_set<const Saved*> s;
  return s;
}

at::Tensor make_handle(c10::intrusive_ptr<Saved> saved) {
  const Saved* raw = saved.get();
  {
    std::lock_guard<std::mutex> lock(live_mutex());
    live().insert(raw);
  }
  auto* cell = new int64_t(reinterpret_cast<int64_t>(raw));
  // The deleter owns the Saved: it goes when the handle's storage does.
  return at::from_blob(
      cell, {1},
      [saved = std::move(saved), cell](void*) mutable {
        {
          std::lock_guard<std::mutex> lock(live_mutex());
          live().erase(saved.get());
        }
        saved.reset();
        delete cell;
      },
      at::TensorOptions().dtype(at::kLong));
}

Saved& from_handle(const at::Tensor& handle) {
  TORCH_CHECK(handle.device().is_cpu() && handle.scalar_type() == at::kLong &&
                  handle.numel() == 1,
              kSplit, ": 'handle' must be the CPU int64 [1] tensor that "
              "sage_tree_begin returned, got ", handle.scalar_type(), " of shape ",
              handle.sizes(), " on ", handle.device());
  auto* raw = reinterpret_cast<Saved*>(handle.data_ptr<int64_t>()[0]);
  std::lock_guard<std::mutex> lock(live_mutex());
  TORCH_CHECK(live().count(raw), kSplit,
              ": 'handle' holds no live step (not from sage_tree_begin, or "
              "its forward is gone)");
  return *raw;
}

std::tuple<at::Tensor, at::Tensor, int64_t> sage_tree_begin(
    const at::Tensor& x, const at::Tensor& colptr, const at::Tensor& row,
    const at::Tensor& seeds, at::TensorList params, at::IntArrayRef num_neighbors,
    at::ScalarType dtype, c10::string_view aggr, bool replace, int64_t rng_seed,
    double dropout, bool bias, c10::List<bool> need, bool inplace_backward,
    bool replay) {
  TORCH_CHECK(need.size() == 1 + params.size(), kOp, ": 'need' must have one "
              "flag for x and one per parameter (", 1 + params.size(), "), got ",
              need.size());
  const Options o = make_options(num_neighbors, aggr, replace, rng_seed, dropout,
                                 dtype, bias, inplace_backward, replay);
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  Replay how = Replay::kEager;
  auto [out, saved] = begin_step(x, colptr, row, seeds, params, o,
                                 std::vector<bool>(need.begin(), need.end()), &how);
  return {out, make_handle(std::move(saved)), static_cast<int64_t>(how)};
}

std::vector<at::Tensor> sage_tree_finish(const at::Tensor& grad,
                                         const at::Tensor& handle,
                                         c10::List<bool> need) {
  Saved& saved = from_handle(handle);
  TORCH_CHECK(need.size() == 1 + saved.num_params, kSplit, ": 'need' must have ",
              1 + saved.num_params, " flags (x and every parameter), got ",
              need.size());
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  std::vector<bool> flags(need.begin(), need.end());
  std::vector<at::Tensor> all = finish_step(saved, grad, flags);
  // A replayed backward hands its gradients out as views of one buffer; an
  // op's outputs may not alias each other, so all but the first are copied
  // (a few parameter-sized copies).
  std::vector<at::Tensor> out;
  std::unordered_set<const c10::StorageImpl*> storages;
  for (size_t i = 0; i < flags.size(); ++i) {
    if (!flags[i]) continue;
    at::Tensor g = all[i];
    if (!storages.insert(g.storage().unsafeGetStorageImpl()).second) g = g.clone();
    out.push_back(g);
  }
  return out;
}

}  // namespace
}  // namespace sage_tree
}  // namespace fusesample

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "sage_tree_begin(Tensor x, Tensor colptr, Tensor row, Tensor seeds, "
      "Tensor[] params, int[] num_neighbors, ScalarType dtype, str aggr, "
      "bool replace, int rng_seed, float dropout, bool bias, bool[] need, "
      "bool inplace_backward, bool replay) -> (Tensor out, Tensor handle, "
      "int replayed)");
  m.def("sage_tree_finish(Tensor grad, Tensor handle, bool[] need) -> Tensor[]");
}

TORCH_LIBRARY_IMPL(fusesample, CompositeExplicitAutograd, m) {
  m.impl("sage_tree_begin", &fusesample::sage_tree::sage_tree_begin);
  m.impl("sage_tree_finish", &fusesample::sage_tree::sage_tree_finish);
}
