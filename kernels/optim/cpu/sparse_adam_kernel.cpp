// CPU kernel of fusesample::sparse_adam_ (contract: ../sparse_adam.cpp):
// the gradient's rows in parallel (they are distinct, so no two threads
// write one entry).
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>

#include "../sparse_adam.h"

namespace fusesample {
namespace sparse_adam {
namespace {

// Plain operators: one rounding each (the extension is built without
// floating-point contraction, so a * b + c stays two operations).
struct HostOp {
  template <typename T> static T add(T a, T b) { return a + b; }
  template <typename T> static T sub(T a, T b) { return a - b; }
  template <typename T> static T mul(T a, T b) { return a * b; }
  template <typename T> static T div(T a, T b) { return a / b; }
  template <typename T> static T sqrt(T a) { return std::sqrt(a); }
};

void sparse_adam_cpu(const at::Tensor& param, const at::Tensor& exp_avg,
                     const at::Tensor& exp_avg_sq,
                     const at::Tensor& rows_, const at::Tensor& values_,
                     double step_size, double beta1, double beta2, double eps,
                     bool maximize) {
  check_inputs(param, exp_avg, exp_avg_sq, rows_, values_);
  const auto rows = rows_.contiguous(), values = values_.contiguous();
  check_ids_in_range_cpu(kOp, "rows", rows, param.size(0));
  const int64_t K = rows.numel(), D = row_size(param);
  AT_DISPATCH_FLOATING_TYPES(param.scalar_type(), "sparse_adam_cpu", [&] {
    const Coeffs<scalar_t> c(beta1, beta2, eps, step_size);
    scalar_t* p = param.mutable_data_ptr<scalar_t>();
    scalar_t* m = exp_avg.mutable_data_ptr<scalar_t>();
    scalar_t* v = exp_avg_sq.mutable_data_ptr<scalar_t>();
    const scalar_t* g = values.const_data_ptr<scalar_t>();
    const int64_t* r = rows.const_data_ptr<int64_t>();
    at::parallel_for(0, K, std::max<int64_t>(1, 4096 / std::max<int64_t>(D, 1)),
                     [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) {
        const int64_t base = r[k] * D;
        for (int64_t d = 0; d < D; ++d) {
          const scalar_t grad = g[k * D + d];
          update<HostOp>(p[base + d], m[base + d], v[base + d],
                         maximize ? -grad : grad, c);
        }
      }
    });
  });
}

}  // namespace
}  // namespace sparse_adam

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("sparse_adam_", &sparse_adam::sparse_adam_cpu);
}

}  // namespace fusesample
