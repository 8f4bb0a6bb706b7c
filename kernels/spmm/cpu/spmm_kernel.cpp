// CPU kernels of fusesample::spmm, sddmm, csr_softmax (contract: ../spmm.cpp),
// the reference the CUDA variants are tested against. Rows in parallel
// (at::parallel_for), each row accumulated in opmath type in edge order.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../spmm_common.h"

namespace fusesample {
namespace {

constexpr const char* kSpmm = "fusesample::spmm";
constexpr const char* kSddmm = "fusesample::sddmm";
constexpr const char* kSoftmax = "fusesample::csr_softmax";
constexpr const char* kSoftmaxBackward = "fusesample::csr_softmax_backward";

at::Tensor spmm_cpu(const at::Tensor& rowptr, const at::Tensor& col,
                    const c10::optional<at::Tensor>& value, const at::Tensor& x,
                    c10::string_view reduce, c10::string_view variant,
                    int64_t /*hub_threshold: a CUDA variant's*/,
                    const c10::optional<at::Tensor>& /*hub_rows*/,
                    int64_t lanes,
                    const c10::optional<at::Tensor>& light_rows) {
  // light_rows orders the CUDA light-row kernel's work; checked, not used.
  check_light_rows(kSpmm, light_rows, rowptr);
  TORCH_CHECK(lanes == 0 || (lanes > 0 && lanes <= 32 && (lanes & (lanes - 1)) == 0),
              kSpmm, ": 'lanes' must be 0 (automatic) or a power of two <= 32, got ", lanes);
  const int64_t heads = check_spmm(kSpmm, rowptr, col, value, x);
  const bool mean = parse_spmm_mean(kSpmm, std::string(reduce));
  parse_spmm_variant(kSpmm, std::string(variant));
  const auto rowptr_c = rowptr.contiguous(), col_c = col.contiguous(),
             x_c = x.contiguous();
  const auto value_c = value.has_value() ? value->contiguous() : at::Tensor();
  const int64_t R = rowptr.numel() - 1, F = x.size(1), C = F / heads;
  auto out = at::empty({R, F}, x.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "spmm_cpu", [&] {
    using scalar_t_ = scalar_t;
    using acc_t = at::opmath_type<scalar_t_>;
    AT_DISPATCH_INDEX_TYPES(col.scalar_type(), "spmm_cpu", [&] {
      const int64_t* rp = rowptr_c.data_ptr<int64_t>();
      const index_t* cp = col_c.data_ptr<index_t>();
      const scalar_t_* xp = x_c.data_ptr<scalar_t_>();
      const scalar_t_* vp = value_c.defined() ? value_c.data_ptr<scalar_t_>() : nullptr;
      scalar_t_* op = out.data_ptr<scalar_t_>();
      at::parallel_for(0, R, 64, [&](int64_t lo, int64_t hi) {
        std::vector<acc_t> acc(F);
        for (int64_t r = lo; r < hi; ++r) {
          std::fill(acc.begin(), acc.end(), acc_t(0));
          for (int64_t e = rp[r]; e < rp[r + 1]; ++e) {
            const scalar_t_* xr = xp + static_cast<int64_t>(cp[e]) * F;
            for (int64_t f = 0; f < F; ++f) {
              const acc_t w = vp ? static_cast<acc_t>(vp[e * heads + f / C]) : acc_t(1);
              acc[f] += w * static_cast<acc_t>(xr[f]);
            }
          }
          const int64_t deg = rp[r + 1] - rp[r];
          const acc_t scale = mean && deg > 0 ? acc_t(1) / static_cast<acc_t>(deg) : acc_t(1);
          for (int64_t f = 0; f < F; ++f)
            op[r * F + f] = static_cast<scalar_t_>(acc[f] * scale);
        }
      });
    });
  });
  return out;
}

at::Tensor sddmm_cpu(const at::Tensor& rowptr, const at::Tensor& col,
                     const at::Tensor& a, const at::Tensor& b) {
  check_sddmm(kSddmm, rowptr, col, a, b);
  const int64_t H = a.dim() == 3 ? a.size(1) : 1, C = a.size(-1);
  const int64_t R = rowptr.numel() - 1, E = col.numel();
  auto out = a.dim() == 3 ? at::empty({E, H}, a.options()) : at::empty({E}, a.options());
  const auto rowptr_c = rowptr.contiguous(), col_c = col.contiguous(),
             a_c = a.contiguous(), b_c = b.contiguous();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "sddmm_cpu", [&] {
    using scalar_t_ = scalar_t;
    using acc_t = at::opmath_type<scalar_t_>;
    AT_DISPATCH_INDEX_TYPES(col.scalar_type(), "sddmm_cpu", [&] {
      const int64_t* rp = rowptr_c.data_ptr<int64_t>();
      const index_t* cp = col_c.data_ptr<index_t>();
      const scalar_t_* ap = a_c.data_ptr<scalar_t_>();
      const scalar_t_* bp = b_c.data_ptr<scalar_t_>();
      scalar_t_* op = out.data_ptr<scalar_t_>();
      at::parallel_for(0, R, 64, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r)
          for (int64_t e = rp[r]; e < rp[r + 1]; ++e)
            for (int64_t h = 0; h < H; ++h) {
              const scalar_t_* ar = ap + (r * H + h) * C;
              const scalar_t_* br = bp + (static_cast<int64_t>(cp[e]) * H + h) * C;
              acc_t s = 0;
              for (int64_t c = 0; c < C; ++c)
                s += static_cast<acc_t>(ar[c]) * static_cast<acc_t>(br[c]);
              op[e * H + h] = static_cast<scalar_t_>(s);
            }
      });
    });
  });
  return out;
}

// Per (row, head): the row's slice of an [E, H] tensor, stride H.
template <typename Fn>
void for_each_row_head(const at::Tensor& rowptr, int64_t H, Fn fn) {
  const int64_t R = rowptr.numel() - 1;
  const int64_t* rp = rowptr.data_ptr<int64_t>();
  at::parallel_for(0, R, 64, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r)
      for (int64_t h = 0; h < H; ++h) fn(rp[r], rp[r + 1], h);
  });
}

at::Tensor csr_softmax_cpu(const at::Tensor& rowptr, const at::Tensor& value) {
  const int64_t H = check_softmax_value(kSoftmax, rowptr, value);
  const auto rowptr_c = rowptr.contiguous(), v = value.contiguous();
  auto out = at::empty_like(v);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, v.scalar_type(), "csr_softmax_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* vp = v.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    for_each_row_head(rowptr_c, H, [&](int64_t b, int64_t e, int64_t h) {
      acc_t mx = -std::numeric_limits<acc_t>::infinity(), sum = 0;
      for (int64_t i = b; i < e; ++i) mx = std::max(mx, static_cast<acc_t>(vp[i * H + h]));
      for (int64_t i = b; i < e; ++i) sum += std::exp(static_cast<acc_t>(vp[i * H + h]) - mx);
      for (int64_t i = b; i < e; ++i)
        op[i * H + h] = static_cast<scalar_t>(std::exp(static_cast<acc_t>(vp[i * H + h]) - mx) / sum);
    });
  });
  return out;
}

at::Tensor csr_softmax_backward_cpu(const at::Tensor& rowptr, const at::Tensor& out,
                                    const at::Tensor& grad) {
  const int64_t H = check_softmax_value(kSoftmaxBackward, rowptr, out);
  TORCH_CHECK(grad.sizes() == out.sizes() && grad.scalar_type() == out.scalar_type(),
              kSoftmaxBackward, ": 'grad' must match 'out' (", out.sizes(), ", ",
              out.scalar_type(), "), got ", grad.sizes(), ", ", grad.scalar_type());
  const auto rowptr_c = rowptr.contiguous(), o = out.contiguous(), g = grad.contiguous();
  auto gin = at::empty_like(o);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, o.scalar_type(), "csr_softmax_backward_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* op = o.data_ptr<scalar_t>();
    const scalar_t* gp = g.data_ptr<scalar_t>();
    scalar_t* ip = gin.data_ptr<scalar_t>();
    for_each_row_head(rowptr_c, H, [&](int64_t b, int64_t e, int64_t h) {
      acc_t dot = 0;
      for (int64_t i = b; i < e; ++i)
        dot += static_cast<acc_t>(op[i * H + h]) * static_cast<acc_t>(gp[i * H + h]);
      for (int64_t i = b; i < e; ++i)
        ip[i * H + h] = static_cast<scalar_t>(
            static_cast<acc_t>(op[i * H + h]) * (static_cast<acc_t>(gp[i * H + h]) - dot));
    });
  });
  return gin;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("spmm", &spmm_cpu);
  m.impl("sddmm", &sddmm_cpu);
  m.impl("csr_softmax", &csr_softmax_cpu);
  m.impl("csr_softmax_backward", &csr_softmax_backward_cpu);
}

}  // namespace fusesample
