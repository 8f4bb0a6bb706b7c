// CPU kernel of fusesample::normalize_by_target: the runs one after another.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/Dispatch.h>
#include <torch/library.h>

#include "../normalize_by_target.h"

namespace fusesample {
namespace layer {
namespace {

at::Tensor normalize_by_target_cpu(const at::Tensor& weight_arg,
                                   const at::Tensor& col_arg,
                                   const at::Tensor& num_sampled_edges,
                                   at::ScalarType dtype) {
  const std::vector<int64_t> count =
      check_normalize_inputs(weight_arg, col_arg, num_sampled_edges, dtype);
  const at::Tensor weight = weight_arg.contiguous(), col = col_arg.contiguous();
  at::Tensor out = at::empty({weight.numel()}, weight.options().dtype(dtype));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype,
                                  "normalize_by_target_cpu", [&] {
    const double* w = weight.data_ptr<double>();
    const int64_t* c = col.data_ptr<int64_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    int64_t begin = 0;
    for (const int64_t edges : count) {
      const int64_t end = begin + edges;
      for (int64_t head = begin; head < end;)
        head = normalize_run(w, c, head, end, o);
      begin = end;
    }
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("normalize_by_target", &normalize_by_target_cpu);
}

}  // namespace layer
}  // namespace fusesample
