// CPU kernels of fusesample::skipgram_loss (contract: ../skipgram_loss.cpp):
// windows in parallel for the per-window term sums and gradient
// coefficients; the gradient scatter (in float, or double for float64) in
// parallel over column blocks, so no two threads add into the same entry and
// the result does not depend on the thread count.
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../skipgram_loss.h"

namespace fusesample {
namespace skipgram {
namespace {

template <typename scalar_t, typename acc_t = at::opmath_type<scalar_t>>
acc_t dot(const scalar_t* a, const scalar_t* b, int64_t dim) {
  acc_t acc = 0;
  for (int64_t d = 0; d < dim; ++d)
    acc += static_cast<acc_t>(a[d]) * static_cast<acc_t>(b[d]);
  return acc;
}

// Per window, the sum of its pairs' terms (positive: pos's windows).
template <typename scalar_t>
at::Tensor window_terms(const at::Tensor& h, const at::Tensor& windows,
                        bool positive, double eps) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t W = windows.size(0), C = windows.size(1), D = h.size(1);
  at::Tensor terms = at::empty({W}, h.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
  const scalar_t* hp = h.data_ptr<scalar_t>();
  const int64_t* ids = windows.data_ptr<int64_t>();
  acc_t* out = terms.data_ptr<acc_t>();
  at::parallel_for(0, W, 256, [&](int64_t lo, int64_t hi) {
    for (int64_t w = lo; w < hi; ++w) {
      const scalar_t* start = hp + ids[w * C] * D;
      acc_t sum = 0;
      for (int64_t j = 1; j < C; ++j)
        sum += pair_term<acc_t>(dot<scalar_t>(start, hp + ids[w * C + j] * D, D),
                                positive, static_cast<acc_t>(eps));
      out[w] = sum;
    }
  });
  return terms;
}

at::Tensor skipgram_loss_cpu(const at::Tensor& h_, const at::Tensor& pos_,
                             const at::Tensor& neg_, double eps, bool check_index) {
  check_inputs(h_, pos_, neg_);
  const auto h = h_.contiguous(), pos = pos_.contiguous(), neg = neg_.contiguous();
  if (check_index) {
    check_ids_in_range_cpu(kOp, "pos", pos, h.size(0));
    check_ids_in_range_cpu(kOp, "neg", neg, h.size(0));
  }
  at::Tensor loss;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, h.scalar_type(),
                                  "skipgram_loss_cpu", [&] {
    const auto p = window_terms<scalar_t>(h, pos, true, eps).sum();
    const auto n = window_terms<scalar_t>(h, neg, false, eps).sum();
    loss = (-(p / num_pairs(pos)) - n / num_pairs(neg)).to(h.scalar_type());
  });
  return loss;
}

at::Tensor skipgram_loss_backward_cpu(const at::Tensor& grad, const at::Tensor& h_,
                                      const at::Tensor& pos_, const at::Tensor& neg_,
                                      double eps) {
  check_inputs(h_, pos_, neg_);
  TORCH_CHECK(grad.numel() == 1, kOp, "_backward: 'grad' must have one element");
  const auto h = h_.contiguous(), pos = pos_.contiguous(), neg = neg_.contiguous();
  const double g = grad.item<double>();
  at::Tensor grad_acc;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, h.scalar_type(),
                                  "skipgram_loss_backward_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const int64_t D = h.size(1);
    const scalar_t* hp = h.data_ptr<scalar_t>();
    grad_acc = at::zeros(h.sizes(), h.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
    // d loss / d score of every pair, one group after the other.
    struct Group { const int64_t* ids; int64_t W, C; std::vector<acc_t> coef; };
    Group groups[2] = {{pos.data_ptr<int64_t>(), pos.size(0), pos.size(1), {}},
                       {neg.data_ptr<int64_t>(), neg.size(0), neg.size(1), {}}};
    for (int k = 0; k < 2; ++k) {
      Group& G = groups[k];
      const bool positive = k == 0;
      const acc_t scale = static_cast<acc_t>(-g / num_pairs(positive ? pos : neg));
      G.coef.assign(G.W * (G.C - 1), acc_t(0));
      at::parallel_for(0, G.W, 256, [&](int64_t lo, int64_t hi) {
        for (int64_t w = lo; w < hi; ++w) {
          const scalar_t* start = hp + G.ids[w * G.C] * D;
          for (int64_t j = 1; j < G.C; ++j)
            G.coef[w * (G.C - 1) + j - 1] = scale * pair_term_grad<acc_t>(
                dot<scalar_t>(start, hp + G.ids[w * G.C + j] * D, D), positive,
                static_cast<acc_t>(eps));
        }
      });
    }
    // Column blocks in parallel: each thread owns its columns of every row.
    constexpr int64_t kBlock = 16;
    acc_t* out = grad_acc.data_ptr<acc_t>();
    at::parallel_for(0, (D + kBlock - 1) / kBlock, 1, [&](int64_t lo, int64_t hi) {
      const int64_t d0 = lo * kBlock, d1 = std::min(D, hi * kBlock);
      auto add = [&](int64_t row, acc_t c, const scalar_t* from) {
        for (int64_t d = d0; d < d1; ++d)
          out[row * D + d] += c * static_cast<acc_t>(from[d]);
      };
      for (const Group& G : groups)
        for (int64_t w = 0; w < G.W; ++w) {
          const int64_t u = G.ids[w * G.C];
          for (int64_t j = 1; j < G.C; ++j) {
            const int64_t v = G.ids[w * G.C + j];
            const acc_t c = G.coef[w * (G.C - 1) + j - 1];
            add(u, c, hp + v * D);
            add(v, c, hp + u * D);
          }
        }
    });
  });
  return grad_acc.to(h.scalar_type());
}

}  // namespace
}  // namespace skipgram

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("skipgram_loss", &skipgram::skipgram_loss_cpu);
  m.impl("skipgram_loss_backward", &skipgram::skipgram_loss_backward_cpu);
}

}  // namespace fusesample
