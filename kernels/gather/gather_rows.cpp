// fusesample::gather_rows -- out[i] = src[index[i]] along dim 0, for any
// dtype: the loader's slicing of node and edge attributes.
//
// Contract: src [N, ...] (any dtype), index [M] int64; returns [M, ...] on
// index's device. src is on index's device, or -- for a CUDA index -- in
// pinned host memory, which the CUDA kernel reads zero-copy through unified
// virtual addressing (graphs whose features do not fit the GPU; a CPU src
// that is not pinned is refused, never copied behind the caller's back). With
// check_index=True an index outside [0, N) raises (on CUDA this costs a host
// sync); with check_index=False the caller guarantees the range (the loader
// passes sampler output) and the CUDA kernel writes zeros for a bad index
// rather than reading out of bounds. The CUDA kernel copies rows with the
// widest aligned vector (up to 16 bytes), which PyTorch's generic gather does
// not reach for rows of a few hundred bytes.
//
// fusesample::gather_rows_list -- gather_rows of every tensor of a list with
// one index, in one call: a GPU batch gathers five or more node attributes,
// and each trip from Python through the dispatcher costs more host time than
// its kernel takes to run. Defined by gather_rows (composite), so it has the
// same contract, devices and fake tensors.
//
// fusesample::gather_rows_cached -- gather_rows through a cache of hot rows:
// out[i] = cache[cache_slot[index[i]]] where that slot is >= 0, else
// src[index[i]] (src typically pinned host memory, cache on the GPU). Adds
// the number of rows served from the cache to hits[0] (int64, on index's
// device; read it when reporting, not per batch). cache [C, ...] has src's
// row shape and dtype; cache_slot [N] int32. Indices must lie in [0, N) (the
// loader passes sampler output): the CUDA kernel writes zeros for one that
// does not rather than reading out of bounds. Slots must be -1 or in
// [0, C): the CPU kernel raises for the batch's slots; the CUDA kernel
// (which cannot check without a sync) reads a slot past the cache from src.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <vector>

namespace fusesample {
namespace {

std::vector<at::Tensor> gather_rows_list(at::TensorList src, const at::Tensor& index,
                                         bool check_index) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("fusesample::gather_rows", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, bool)>();
  std::vector<at::Tensor> out;
  out.reserve(src.size());
  for (const at::Tensor& t : src) out.push_back(op.call(t, index, check_index));
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("gather_rows(Tensor src, Tensor index, bool check_index=True) -> Tensor");
  m.def("gather_rows_list(Tensor[] src, Tensor index, bool check_index=True) "
        "-> Tensor[]");
  m.def("gather_rows_cached(Tensor src, Tensor cache, Tensor cache_slot, "
        "Tensor index, Tensor(a!) hits) -> Tensor");
}

TORCH_LIBRARY_IMPL(fusesample, CompositeImplicitAutograd, m) {
  m.impl("gather_rows_list", &gather_rows_list);
}

}  // namespace fusesample
