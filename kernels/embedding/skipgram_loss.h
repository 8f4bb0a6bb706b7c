// fusesample::skipgram_loss: shared by the CPU and CUDA kernels -- the
// argument checks and the per-pair arithmetic of the loss and its gradient.
//
// A pair is (window start u, context node v) with score x = <h_u, h_v>. The
// loss is PyG's Node2Vec.loss,
//   -mean_pos log(sigmoid(x) + eps) - mean_neg log(1 - sigmoid(x) + eps),
// so a positive pair's term is log(sigmoid(x) + eps), a negative pair's
// log(1 - sigmoid(x) + eps), each divided by its group's pair count and
// negated; the gradient of a term is the chain rule through exactly those
// expressions (sigmoid' = s (1 - s)), as autograd takes it through PyG's.
#pragma once

#include <ATen/core/Tensor.h>

#include <cmath>

#include "../common/checks.h"
#include "../common/rng.h"  // FS_HOST_DEVICE

namespace fusesample {
namespace skipgram {

constexpr const char* kOp = "fusesample::skipgram_loss";

template <typename acc_t>
FS_HOST_DEVICE acc_t sigmoid(acc_t x) {
  using std::exp;
  return acc_t(1) / (acc_t(1) + exp(-x));
}

// A pair's term of the loss (before the group's negated mean).
template <typename acc_t>
FS_HOST_DEVICE acc_t pair_term(acc_t x, bool positive, acc_t eps) {
  using std::log;
  const acc_t s = sigmoid(x);
  return log((positive ? s : acc_t(1) - s) + eps);
}

// d pair_term / d x.
template <typename acc_t>
FS_HOST_DEVICE acc_t pair_term_grad(acc_t x, bool positive, acc_t eps) {
  const acc_t s = sigmoid(x);
  const acc_t ds = s * (acc_t(1) - s);
  return positive ? ds / (s + eps) : -ds / (acc_t(1) - s + eps);
}

// h [U, D] floating; pos [Wp, Cp] and neg [Wn, Cn] int64 rows of h (column
// 0 the window's start), on h's device.
inline void check_inputs(const at::Tensor& h, const at::Tensor& pos,
                         const at::Tensor& neg) {
  TORCH_CHECK(h.dim() == 2, kOp, ": 'h' must be 2-dimensional [rows, dim], "
              "got shape ", h.sizes());
  for (auto [name, t] : {std::pair<const char*, const at::Tensor*>{"pos", &pos},
                         {"neg", &neg}}) {
    TORCH_CHECK(t->dim() == 2 && t->size(1) >= 1, kOp, ": '", name,
                "' must be 2-dimensional [windows, context_size >= 1], got "
                "shape ", t->sizes());
    check_dtype(kOp, name, *t, at::kLong);
    check_same_device(kOp, name, *t, "h", h);
  }
  TORCH_CHECK(at::isFloatingType(h.scalar_type()), kOp,
              ": 'h' must be float64, float32, float16 or bfloat16, got ",
              h.scalar_type());
}

// The pairs of a group (its mean's divisor): 0 gives a NaN loss, as the
// mean of an empty tensor does in PyG's.
inline double num_pairs(const at::Tensor& windows) {
  return static_cast<double>(windows.size(0)) * static_cast<double>(windows.size(1) - 1);
}

}  // namespace skipgram
}  // namespace fusesample
