// CPU kernel of fusesample::segment_cumsum (contract: ../segment_cumsum.cpp):
// segments in parallel, each a left-to-right sum.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../../common/checks.h"
#include "../../common/value_checks.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::segment_cumsum";

at::Tensor segment_cumsum_cpu(const at::Tensor& ptr, const at::Tensor& values) {
  check_1d(kOp, "ptr", ptr);
  check_1d(kOp, "values", values);
  check_dtype(kOp, "ptr", ptr, at::kLong);
  check_dtype(kOp, "values", values, at::kDouble);
  TORCH_CHECK(ptr.numel() >= 1, kOp, ": 'ptr' must hold at least one offset");
  check_graph_pointer_values(kOp, "ptr", ptr, "values", values.numel());
  const auto ptr_c = ptr.contiguous(), values_c = values.contiguous();
  auto out = at::empty_like(values_c);
  const int64_t* p = ptr_c.data_ptr<int64_t>();
  const double* v = values_c.data_ptr<double>();
  double* o = out.data_ptr<double>();
  at::parallel_for(0, ptr.numel() - 1, 1024, [&](int64_t lo, int64_t hi) {
    for (int64_t s = lo; s < hi; ++s) {
      double total = 0.0;
      for (int64_t i = p[s]; i < p[s + 1]; ++i) o[i] = total = total + v[i];
    }
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("segment_cumsum", &segment_cumsum_cpu);
}

}  // namespace fusesample
