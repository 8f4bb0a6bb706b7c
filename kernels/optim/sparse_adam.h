// fusesample::sparse_adam_: shared by the CPU and CUDA kernels -- the
// argument checks and one entry's update.
#pragma once

#include <ATen/core/Tensor.h>

#include "../common/checks.h"
#include "../common/rng.h"  // FS_HOST_DEVICE

namespace fusesample {
namespace sparse_adam {

constexpr const char* kOp = "fusesample::sparse_adam_";

// The step's scalars in the parameter's dtype, rounded from double as torch
// rounds a Python scalar operand of a float32 tensor op.
template <typename T>
struct Coeffs {
  T one_minus_beta1, one_minus_beta2, eps, neg_step_size;
  Coeffs(double beta1, double beta2, double eps_, double step_size)
      : one_minus_beta1(static_cast<T>(1.0 - beta1)),
        one_minus_beta2(static_cast<T>(1.0 - beta2)),
        eps(static_cast<T>(eps_)),
        neg_step_size(static_cast<T>(-step_size)) {}
};

// One entry: torch.optim._functional.sparse_adam's chain, an operation of
// `Op` (each rounded on its own) per tensor op there:
//   m_upd = (g - m) * (1 - beta1);          exp_avg += m_upd
//   v_upd = (g * g - v) * (1 - beta2);      exp_avg_sq += v_upd
//   p += -step_size * ((m_upd + m) / (sqrt(v_upd + v) + eps))
// (m_upd + m is the new exp_avg: the same operands, so the same value.)
template <typename Op, typename T>
FS_HOST_DEVICE void update(T& p, T& m, T& v, T g, const Coeffs<T>& c) {
  const T m_new = Op::add(m, Op::mul(Op::sub(g, m), c.one_minus_beta1));
  const T v_new = Op::add(v, Op::mul(Op::sub(Op::mul(g, g), v), c.one_minus_beta2));
  const T denom = Op::add(Op::sqrt(v_new), c.eps);
  p = Op::add(p, Op::mul(c.neg_step_size, Op::div(m_new, denom)));
  m = m_new;
  v = v_new;
}

// Entries a row of `param` holds (its size past the first dimension).
inline int64_t row_size(const at::Tensor& param) {
  return param.size(0) == 0 ? 0 : param.numel() / param.size(0);
}

inline void check_inputs(const at::Tensor& param, const at::Tensor& exp_avg,
                         const at::Tensor& exp_avg_sq, const at::Tensor& rows,
                         const at::Tensor& values) {
  TORCH_CHECK(param.scalar_type() == at::kFloat || param.scalar_type() == at::kDouble,
              kOp, ": 'param' must be float32 or float64, got ", param.scalar_type(),
              " (torch.optim.SparseAdam takes the others)");
  TORCH_CHECK(param.dim() >= 1, kOp, ": 'param' must have at least one dimension");
  for (auto [name, t] : {std::pair<const char*, const at::Tensor*>{"param", &param},
                         {"exp_avg", &exp_avg}, {"exp_avg_sq", &exp_avg_sq}}) {
    TORCH_CHECK(t->is_contiguous(), kOp, ": '", name, "' must be contiguous");
    TORCH_CHECK(t->sizes() == param.sizes(), kOp, ": '", name, "' has shape ",
                t->sizes(), ", 'param' ", param.sizes());
    check_dtype(kOp, name, *t, param.scalar_type());
    check_same_device(kOp, name, *t, "param", param);
  }
  check_1d(kOp, "rows", rows);
  check_dtype(kOp, "rows", rows, at::kLong);
  check_same_device(kOp, "rows", rows, "param", param);
  check_dtype(kOp, "values", values, param.scalar_type());
  check_same_device(kOp, "values", values, "param", param);
  TORCH_CHECK(values.dim() >= 1 && values.size(0) == rows.size(0) &&
                  values.numel() == rows.numel() * row_size(param),
              kOp, ": 'values' must hold one row of 'param' (", row_size(param),
              " entries) per entry of 'rows' (", rows.numel(), "), got shape ",
              values.sizes());
}

}  // namespace sparse_adam
}  // namespace fusesample
