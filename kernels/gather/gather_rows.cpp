// fusesample::gather_rows -- out[i] = src[index[i]] along dim 0, for any
// dtype: the loader's slicing of node and edge attributes.
//
// Contract: src [N, ...] (any dtype), index [M] int64; returns [M, ...]. With
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
}

TORCH_LIBRARY_IMPL(fusesample, CompositeImplicitAutograd, m) {
  m.impl("gather_rows_list", &gather_rows_list);
}

}  // namespace fusesample
