// CPU kernels of fusesample::segment_aggregate and segment_aggregate_backward
// (contract: ../segment_aggregate.cpp); also the reference the CUDA kernels
// are tested against. Rows in parallel (at::parallel_for), each summed by
// one thread in slot order into an accumulator of opmath type; a bad layout
// raises, naming the argument.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "../segment_common.h"
#include "segment_layout_cpu.h"

namespace fusesample {
namespace {

using segment_cpu::check_ends;
using segment_cpu::row_extent;
using segment_cpu::source_at;

constexpr const char* kOp = "fusesample::segment_aggregate";
constexpr const char* kOpBackward = "fusesample::segment_aggregate_backward";

template <typename scalar_t, typename index_t>
void forward(const at::Tensor& ptr, const at::Tensor& src, const at::Tensor& value,
             const at::Tensor& x, int64_t heads, SegmentReduce reduce, at::Tensor& out,
             at::Tensor& arg) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t R = ptr.numel() - 1, E = src.numel(), N = x.size(0), F = x.size(1);
  const int64_t C = F / heads;
  const int64_t* ptr_p = ptr.data_ptr<int64_t>();
  const index_t* src_p = src.data_ptr<index_t>();
  const scalar_t* val_p = value.defined() ? value.data_ptr<scalar_t>() : nullptr;
  const scalar_t* x_p = x.data_ptr<scalar_t>();
  scalar_t* out_p = out.data_ptr<scalar_t>();
  int64_t* arg_p = reduce == SegmentReduce::kMax ? arg.data_ptr<int64_t>() : nullptr;
  check_ends(kOp, "ptr", ptr_p, R, E);
  at::parallel_for(0, R, 64, [&](int64_t lo, int64_t hi) {
    std::vector<acc_t> acc(F);
    for (int64_t r = lo; r < hi; ++r) {
      int64_t e0, e1;
      row_extent(kOp, "ptr", ptr_p, r, E, e0, e1);
      scalar_t* o = out_p + r * F;
      if (reduce == SegmentReduce::kMax) {
        int64_t* a = arg_p + r * F;
        std::fill(a, a + F, int64_t(-1));
        for (int64_t e = e0; e < e1; ++e) {
          const scalar_t* xr = x_p + source_at(kOp, "src", src_p, e, N) * F;
          for (int64_t f = 0; f < F; ++f) {
            const acc_t v = static_cast<acc_t>(xr[f]);
            if (a[f] < 0 || v > acc[f]) {
              acc[f] = v;
              a[f] = e;
            }
          }
        }
        for (int64_t f = 0; f < F; ++f)
          o[f] = a[f] < 0 ? scalar_t(0) : static_cast<scalar_t>(acc[f]);
        continue;
      }
      std::fill(acc.begin(), acc.end(), acc_t(0));
      for (int64_t e = e0; e < e1; ++e) {
        const scalar_t* xr = x_p + source_at(kOp, "src", src_p, e, N) * F;
        if (val_p == nullptr) {
          for (int64_t f = 0; f < F; ++f) acc[f] += static_cast<acc_t>(xr[f]);
        } else {
          for (int64_t h = 0; h < heads; ++h) {
            const acc_t w = static_cast<acc_t>(val_p[e * heads + h]);
            for (int64_t f = h * C; f < (h + 1) * C; ++f) acc[f] += w * static_cast<acc_t>(xr[f]);
          }
        }
      }
      const acc_t scale = reduce == SegmentReduce::kMean && e1 > e0
                              ? acc_t(1) / static_cast<acc_t>(e1 - e0)
                              : acc_t(1);
      for (int64_t f = 0; f < F; ++f) o[f] = static_cast<scalar_t>(acc[f] * scale);
    }
  });
}

std::tuple<at::Tensor, at::Tensor> segment_aggregate_cpu(
    const at::Tensor& ptr, const at::Tensor& src, const c10::optional<at::Tensor>& value,
    const at::Tensor& x, c10::string_view reduce_name) {
  const SegmentReduce reduce = parse_segment_reduce(kOp, std::string(reduce_name));
  const int64_t heads = check_segment_aggregate(kOp, ptr, src, value, x, reduce);
  const auto ptr_c = ptr.contiguous(), src_c = src.contiguous(), x_c = x.contiguous();
  const auto value_c = value.has_value() ? value->contiguous() : at::Tensor();
  const int64_t R = ptr.numel() - 1, F = x.size(1);
  auto out = at::empty({R, F}, x.options());
  auto arg = reduce == SegmentReduce::kMax ? at::empty({R, F}, ptr.options())
                                           : at::empty({0}, ptr.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "segment_aggregate",
                                  [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(src.scalar_type(), "segment_aggregate", [&] {
      forward<scalar_t_, index_t>(ptr_c, src_c, value_c, x_c, heads, reduce, out, arg);
    });
  });
  return std::make_tuple(out, arg);
}

// Columns in parallel (ranges of at least 16), rows and their slots in
// order within a range: every element of grad_x is summed in slot order by
// one thread (as the CUDA kernel sums), into an opmath accumulator.
template <typename scalar_t, typename index_t>
void backward(const at::Tensor& ptr, const at::Tensor& src, const at::Tensor& value,
              const at::Tensor& grad, const at::Tensor& arg, int64_t heads,
              SegmentReduce reduce, at::Tensor& grad_x) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t R = ptr.numel() - 1, E = src.numel(), N = grad_x.size(0), F = grad.size(1);
  const int64_t C = F / heads;
  const int64_t* ptr_p = ptr.data_ptr<int64_t>();
  const index_t* src_p = src.data_ptr<index_t>();
  const scalar_t* val_p = value.defined() ? value.data_ptr<scalar_t>() : nullptr;
  const scalar_t* g_p = grad.data_ptr<scalar_t>();
  const int64_t* arg_p = reduce == SegmentReduce::kMax ? arg.data_ptr<int64_t>() : nullptr;
  check_ends(kOpBackward, "ptr", ptr_p, R, E);
  for (int64_t r = 0; r < R; ++r) {  // the layout first: a bad one raises at once
    int64_t e0, e1;
    row_extent(kOpBackward, "ptr", ptr_p, r, E, e0, e1);
    for (int64_t e = e0; e < e1; ++e) source_at(kOpBackward, "src", src_p, e, N);
  }
  std::vector<acc_t> acc(N * F, acc_t(0));
  at::parallel_for(0, F, 16, [&](int64_t f0, int64_t f1) {
    for (int64_t r = 0; r < R; ++r) {
      const int64_t e0 = ptr_p[r], e1 = ptr_p[r + 1];
      const acc_t scale = reduce == SegmentReduce::kMean && e1 > e0
                              ? acc_t(1) / static_cast<acc_t>(e1 - e0)
                              : acc_t(1);
      const scalar_t* g = g_p + r * F;
      for (int64_t e = e0; e < e1; ++e) {
        acc_t* out = acc.data() + static_cast<int64_t>(src_p[e]) * F;
        for (int64_t f = f0; f < f1; ++f) {
          if (arg_p != nullptr) {
            if (arg_p[r * F + f] == e) out[f] += static_cast<acc_t>(g[f]);
          } else {
            const acc_t w = val_p ? static_cast<acc_t>(val_p[e * heads + f / C]) : acc_t(1);
            out[f] += w * scale * static_cast<acc_t>(g[f]);
          }
        }
      }
    }
  });
  scalar_t* gx_p = grad_x.data_ptr<scalar_t>();
  for (int64_t i = 0; i < N * F; ++i) gx_p[i] = static_cast<scalar_t>(acc[i]);
}

at::Tensor segment_aggregate_backward_cpu(const at::Tensor& ptr, const at::Tensor& src,
                                          const at::Tensor& dst,
                                          const c10::optional<at::Tensor>& value,
                                          const at::Tensor& grad, const at::Tensor& arg,
                                          int64_t num_src, c10::string_view reduce_name,
                                          const c10::optional<at::Tensor>& order_key,
                                          const c10::optional<at::Tensor>& order_slot,
                                          const c10::optional<at::Tensor>& order_ptr) {
  // (this kernel sums by target, in slot order: it needs no grouping by
  // source, so a given one is checked and not read)
  const SegmentBackwardArgs checked = check_segment_aggregate_backward(
      kOpBackward, ptr, src, dst, value, grad, arg, num_src, reduce_name, order_key, order_slot,
      order_ptr);
  // (named copies: lambdas below capture them)
  const SegmentReduce reduce = checked.reduce;
  const int64_t heads = checked.heads;
  auto grad_x = at::empty({num_src, grad.size(1)}, grad.options());
  const auto ptr_c = ptr.contiguous(), src_c = src.contiguous(), grad_c = grad.contiguous();
  const auto value_c = value.has_value() ? value->contiguous() : at::Tensor();
  const auto arg_c = reduce == SegmentReduce::kMax ? arg.contiguous() : at::Tensor();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad.scalar_type(),
                                  "segment_aggregate_backward", [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(src.scalar_type(), "segment_aggregate_backward", [&] {
      backward<scalar_t_, index_t>(ptr_c, src_c, value_c, grad_c, arg_c, heads, reduce, grad_x);
    });
  });
  return grad_x;
}

// The slots grouped by source, stably: a counting sort (sources are rows,
// so num_src bounds them); a source out of range raises.
std::tuple<at::Tensor, at::Tensor, at::Tensor> segment_source_order_cpu(const at::Tensor& src,
                                                                        int64_t num_src) {
  constexpr const char* op = "fusesample::segment_source_order";
  check_segment_source_order(op, src, num_src);
  const auto src_c = src.contiguous();
  const int64_t E = src_c.numel(), N = num_src;
  auto key = at::empty({E}, src.options().dtype(at::kInt));
  auto slot = at::empty({E}, src.options().dtype(at::kLong));
  auto ptr = at::zeros({N + 1}, src.options().dtype(at::kLong));
  int64_t* ptr_p = ptr.data_ptr<int64_t>();
  AT_DISPATCH_INDEX_TYPES(src_c.scalar_type(), op, [&] {
    const index_t* s = src_c.data_ptr<index_t>();
    for (int64_t e = 0; e < E; ++e) ++ptr_p[source_at(op, "src", s, e, N) + 1];
    for (int64_t j = 0; j < N; ++j) ptr_p[j + 1] += ptr_p[j];
    std::vector<int64_t> next(ptr_p, ptr_p + N);
    int32_t* key_p = key.data_ptr<int32_t>();
    int64_t* slot_p = slot.data_ptr<int64_t>();
    for (int64_t e = 0; e < E; ++e) {
      const int64_t j = static_cast<int64_t>(s[e]), at = next[j]++;
      key_p[at] = static_cast<int32_t>(j);
      slot_p[at] = e;
    }
  });
  return std::make_tuple(key, slot, ptr);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("segment_aggregate", &segment_aggregate_cpu);
  m.impl("segment_aggregate_backward", &segment_aggregate_backward_cpu);
  m.impl("segment_source_order", &segment_source_order_cpu);
}

}  // namespace fusesample
