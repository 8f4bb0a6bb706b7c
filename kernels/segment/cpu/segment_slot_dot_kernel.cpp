// CPU kernel of fusesample::segment_slot_dot (contract: ../segment_slot_dot.cpp);
// also the reference the CUDA kernel is tested against. Rows in parallel,
// each slot's dot per head summed in column order into an opmath
// accumulator; a bad layout raises, naming the argument.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <string>

#include "../segment_common.h"
#include "segment_layout_cpu.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::segment_slot_dot";

template <typename scalar_t, typename index_t>
void slot_dot(const at::Tensor& ptr, const at::Tensor& src, const at::Tensor& grad,
              const at::Tensor& x, int64_t heads, bool mean, at::Tensor& out) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t R = ptr.numel() - 1, E = src.numel(), N = x.size(0), F = x.size(1);
  const int64_t C = F / heads;
  const int64_t* ptr_p = ptr.data_ptr<int64_t>();
  const index_t* src_p = src.data_ptr<index_t>();
  const scalar_t* grad_p = grad.data_ptr<scalar_t>();
  const scalar_t* x_p = x.data_ptr<scalar_t>();
  scalar_t* out_p = out.data_ptr<scalar_t>();
  segment_cpu::check_ends(kOp, "ptr", ptr_p, R, E);
  at::parallel_for(0, R, 64, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t e0, e1;
      segment_cpu::row_extent(kOp, "ptr", ptr_p, r, E, e0, e1);
      const acc_t scale = mean && e1 > e0 ? acc_t(1) / static_cast<acc_t>(e1 - e0) : acc_t(1);
      const scalar_t* g = grad_p + r * F;
      for (int64_t e = e0; e < e1; ++e) {
        const scalar_t* xr = x_p + segment_cpu::source_at(kOp, "src", src_p, e, N) * F;
        for (int64_t h = 0; h < heads; ++h) {
          acc_t s = 0;
          for (int64_t c = h * C; c < (h + 1) * C; ++c)
            s += static_cast<acc_t>(g[c]) * static_cast<acc_t>(xr[c]);
          out_p[e * heads + h] = static_cast<scalar_t>(s * scale);
        }
      }
    }
  });
}

at::Tensor segment_slot_dot_cpu(const at::Tensor& ptr, const at::Tensor& src,
                                const at::Tensor& grad, const at::Tensor& x, int64_t heads,
                                c10::string_view reduce_name) {
  const SegmentReduce reduce = parse_segment_reduce(kOp, std::string(reduce_name));
  check_segment_slot_dot(kOp, ptr, src, grad, x, heads, reduce);
  auto out = at::empty({src.numel(), heads}, x.options());
  const auto ptr_c = ptr.contiguous(), src_c = src.contiguous(), grad_c = grad.contiguous(),
             x_c = x.contiguous();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), kOp, [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(src.scalar_type(), kOp, [&] {
      slot_dot<scalar_t_, index_t>(ptr_c, src_c, grad_c, x_c, heads,
                                   reduce == SegmentReduce::kMean, out);
    });
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("segment_slot_dot", &segment_slot_dot_cpu);
}

}  // namespace fusesample
