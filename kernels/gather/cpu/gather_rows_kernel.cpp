// CPU kernels of fusesample::gather_rows and gather_rows_cached (contract:
// ../gather_rows.cpp): at::index_select is already a parallel row copy on
// the CPU.
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/index_select.h>
#include <torch/library.h>

#include "../../common/checks.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::gather_rows";
constexpr const char* kOpCached = "fusesample::gather_rows_cached";

at::Tensor gather_rows_cpu(const at::Tensor& src, const at::Tensor& index,
                           bool check_index) {
  check_gather_rows(kOp, src, index);
  if (check_index) check_ids_in_range_cpu(kOp, "index", index, src.size(0));
  return at::index_select(src, 0, index);
}

// The reference of the cached gather: the rows from src, then the cached
// ones overwritten from the cache (the same values when the cache is a copy
// of src's rows, which is what the test checks the CUDA kernel against).
at::Tensor gather_rows_cached_cpu(const at::Tensor& src, const at::Tensor& cache,
                                  const at::Tensor& cache_slot,
                                  const at::Tensor& index, at::Tensor& hits) {
  check_row_cache(kOpCached, src, cache, cache_slot, index, hits);
  check_ids_in_range_cpu(kOpCached, "index", index, src.size(0));
  auto out = at::index_select(src, 0, index);
  const auto slot = cache_slot.index_select(0, index);
  // (the batch's slots only: O(batch), not O(len(src)))
  check_ids_in_range_cpu(kOpCached, "cache_slot", slot, cache.size(0),
                         /*lowest=*/-1);
  const auto hit = (slot >= 0).nonzero().view(-1);
  out.index_copy_(0, hit, cache.index_select(0, slot.index_select(0, hit).to(at::kLong)));
  hits.add_(hit.numel());
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("gather_rows", &gather_rows_cpu);
  m.impl("gather_rows_cached", &gather_rows_cached_cpu);
}

}  // namespace fusesample
