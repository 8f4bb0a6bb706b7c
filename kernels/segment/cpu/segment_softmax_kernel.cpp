// CPU kernels of fusesample::segment_softmax and its backward (contract:
// ../segment_softmax.cpp); also the reference the CUDA kernels are tested
// against. Rows in parallel; per row, every head's max, sum and outputs in
// slot order (the self-loop last) in an opmath accumulator; a bad layout
// raises, naming the argument.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty_like.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "../segment_common.h"
#include "segment_layout_cpu.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::segment_softmax";
constexpr const char* kBackwardOp = "fusesample::segment_softmax_backward";

template <typename scalar_t>
void softmax_rows(const int64_t* ptr, const scalar_t* score, const scalar_t* self_score,
                  scalar_t* alpha, scalar_t* alpha_self, int64_t R, int64_t E, int64_t L,
                  int64_t H) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr acc_t kEps = acc_t(1e-16);
  segment_cpu::check_ends(kOp, "ptr", ptr, R, E);
  at::parallel_for(0, R, 64, [&](int64_t lo, int64_t hi) {
    std::vector<acc_t> top(H), total(H);
    for (int64_t r = lo; r < hi; ++r) {
      int64_t e0, e1;
      segment_cpu::row_extent(kOp, "ptr", ptr, r, E, e0, e1);
      const bool own = r < L;
      for (int64_t h = 0; h < H; ++h) {
        acc_t m = own ? static_cast<acc_t>(self_score[r * H + h])
                      : -std::numeric_limits<acc_t>::infinity();
        for (int64_t e = e0; e < e1; ++e) m = std::max(m, static_cast<acc_t>(score[e * H + h]));
        top[h] = std::isinf(m) && m < 0 ? acc_t(0) : m;
        acc_t s = 0;
        for (int64_t e = e0; e < e1; ++e) s += std::exp(static_cast<acc_t>(score[e * H + h]) - top[h]);
        if (own) s += std::exp(static_cast<acc_t>(self_score[r * H + h]) - top[h]);
        total[h] = s + kEps;
      }
      for (int64_t e = e0; e < e1; ++e)
        for (int64_t h = 0; h < H; ++h)
          alpha[e * H + h] = static_cast<scalar_t>(
              std::exp(static_cast<acc_t>(score[e * H + h]) - top[h]) / total[h]);
      if (own)
        for (int64_t h = 0; h < H; ++h)
          alpha_self[r * H + h] = static_cast<scalar_t>(
              std::exp(static_cast<acc_t>(self_score[r * H + h]) - top[h]) / total[h]);
    }
  });
}

template <typename scalar_t>
void softmax_backward_rows(const int64_t* ptr, const scalar_t* alpha, const scalar_t* alpha_self,
                           const scalar_t* grad, const scalar_t* grad_self, scalar_t* out,
                           scalar_t* out_self, int64_t R, int64_t E, int64_t L, int64_t H) {
  using acc_t = at::opmath_type<scalar_t>;
  segment_cpu::check_ends(kBackwardOp, "ptr", ptr, R, E);
  at::parallel_for(0, R, 64, [&](int64_t lo, int64_t hi) {
    std::vector<acc_t> dot(H);
    for (int64_t r = lo; r < hi; ++r) {
      int64_t e0, e1;
      segment_cpu::row_extent(kBackwardOp, "ptr", ptr, r, E, e0, e1);
      const bool own = r < L;
      for (int64_t h = 0; h < H; ++h) {
        acc_t d = 0;
        for (int64_t e = e0; e < e1; ++e)
          d += static_cast<acc_t>(alpha[e * H + h]) * static_cast<acc_t>(grad[e * H + h]);
        if (own)
          d += static_cast<acc_t>(alpha_self[r * H + h]) * static_cast<acc_t>(grad_self[r * H + h]);
        dot[h] = d;
      }
      for (int64_t e = e0; e < e1; ++e)
        for (int64_t h = 0; h < H; ++h)
          out[e * H + h] = static_cast<scalar_t>(
              static_cast<acc_t>(alpha[e * H + h]) * (static_cast<acc_t>(grad[e * H + h]) - dot[h]));
      if (own)
        for (int64_t h = 0; h < H; ++h)
          out_self[r * H + h] = static_cast<scalar_t>(
              static_cast<acc_t>(alpha_self[r * H + h]) *
              (static_cast<acc_t>(grad_self[r * H + h]) - dot[h]));
    }
  });
}

std::tuple<at::Tensor, at::Tensor> segment_softmax_cpu(const at::Tensor& ptr,
                                                       const at::Tensor& score,
                                                       const at::Tensor& self_score) {
  check_segment_softmax(kOp, ptr, score, self_score, "score", "self_score");
  const auto ptr_c = ptr.contiguous(), score_c = score.contiguous(),
             self_c = self_score.contiguous();
  auto alpha = at::empty_like(score_c), alpha_self = at::empty_like(self_c);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, score.scalar_type(), kOp, [&] {
    softmax_rows<scalar_t>(ptr_c.data_ptr<int64_t>(), score_c.data_ptr<scalar_t>(),
                           self_c.data_ptr<scalar_t>(), alpha.data_ptr<scalar_t>(),
                           alpha_self.data_ptr<scalar_t>(), ptr.numel() - 1, score.size(0),
                           self_score.size(0), score.size(1));
  });
  return {alpha, alpha_self};
}

std::tuple<at::Tensor, at::Tensor> segment_softmax_backward_cpu(
    const at::Tensor& ptr, const at::Tensor& alpha, const at::Tensor& alpha_self,
    const at::Tensor& grad, const at::Tensor& grad_self) {
  check_segment_softmax_backward(kBackwardOp, ptr, alpha, alpha_self, grad, grad_self);
  const auto ptr_c = ptr.contiguous(), alpha_c = alpha.contiguous(),
             self_c = alpha_self.contiguous(), grad_c = grad.contiguous(),
             grad_self_c = grad_self.contiguous();
  auto out = at::empty_like(alpha_c), out_self = at::empty_like(self_c);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, alpha.scalar_type(), kBackwardOp,
                                  [&] {
    softmax_backward_rows<scalar_t>(
        ptr_c.data_ptr<int64_t>(), alpha_c.data_ptr<scalar_t>(), self_c.data_ptr<scalar_t>(),
        grad_c.data_ptr<scalar_t>(), grad_self_c.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
        out_self.data_ptr<scalar_t>(), ptr.numel() - 1, alpha.size(0), alpha_self.size(0),
        alpha.size(1));
  });
  return {out, out_self};
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("segment_softmax", &segment_softmax_cpu);
  m.impl("segment_softmax_backward", &segment_softmax_backward_cpu);
}

}  // namespace fusesample
