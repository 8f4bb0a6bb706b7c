// fusesample::spmm's CUDA op (contract: ../spmm.cpp): the checks and the
// element-type dispatch. The kernels (spmm_kernels.cuh, described there) are
// compiled one element type per translation unit, spmm_kernel_<dtype>.cu.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <string>

#include "../spmm_common.h"
#include "spmm_launch.h"

namespace fusesample {
namespace {

constexpr const char* kSpmm = "fusesample::spmm";

at::Tensor spmm_cuda(const at::Tensor& rowptr, const at::Tensor& col,
                     const c10::optional<at::Tensor>& value, const at::Tensor& x,
                     c10::string_view reduce, c10::string_view variant_name,
                     int64_t hub_threshold, const c10::optional<at::Tensor>& hub_rows,
                     int64_t lanes, const c10::optional<at::Tensor>& light_rows) {
  const int64_t heads = check_spmm(kSpmm, rowptr, col, value, x);
  check_light_rows(kSpmm, light_rows, rowptr);
  const bool mean = parse_spmm_mean(kSpmm, std::string(reduce));
  const SpmmVariant variant = parse_spmm_variant(kSpmm, std::string(variant_name));
  TORCH_CHECK(lanes == 0 || (lanes > 0 && lanes <= 32 && (lanes & (lanes - 1)) == 0),
              kSpmm, ": 'lanes' must be 0 (automatic) or a power of two <= 32, got ", lanes);
  at::Tensor hubs;
  if (splits_hubs(variant)) {
    TORCH_CHECK(hub_threshold >= 0 && hub_rows.has_value(), kSpmm,
                ": variants 'hub' and 'hub-subwarp' need hub_threshold >= 0 and hub_rows (the "
                "chunks (row, begin, end) of the rows with more non-zeros than "
                "the threshold: CSRGraph.hub_chunks)");
    TORCH_CHECK(hub_rows->dim() == 2 && hub_rows->size(1) == 3, kSpmm,
                ": 'hub_rows' must be [chunks, 3] (row, begin, end), got ",
                hub_rows->sizes());
    check_dtype(kSpmm, "hub_rows", *hub_rows, at::kLong);
    check_same_device(kSpmm, "hub_rows", *hub_rows, "rowptr", rowptr);
    hubs = hub_rows->contiguous();
  }
  c10::cuda::CUDAGuard guard(rowptr.device());
  const auto rowptr_c = rowptr.contiguous(), col_c = col.contiguous(), x_c = x.contiguous();
  const auto value_c = value.has_value() ? value->contiguous() : at::Tensor();
  // (only the hub-split variants take an order: the others run every row)
  const auto light = light_rows.has_value() && splits_hubs(variant) ? light_rows->contiguous()
                                                                     : at::Tensor();
  const int64_t R = rowptr.numel() - 1, F = x.size(1);
  auto out = at::empty({R, F}, x.options());
  if (R == 0 || F == 0) return out;
  const spmm_kernels::SpmmLaunch launch{rowptr_c, col_c, value_c, x_c, out, heads, mean,
                                     variant, hub_threshold, hubs, lanes, light};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "spmm_cuda",
                                  [&] { spmm_kernels::run<scalar_t>(launch); });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) { m.impl("spmm", &spmm_cuda); }

}  // namespace fusesample
