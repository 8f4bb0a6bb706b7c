// CPU kernel of fusesample::segment_search (contract: ../segment_search.cpp):
// search_runs (std::lower_bound / upper_bound per query, in parallel), after
// checking every run's bounds.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <utility>

#include "../segment_search_checks.h"
#include "search_runs.h"

namespace fusesample {
namespace {

at::Tensor segment_search_cpu(const at::Tensor& sorted, const at::Tensor& first,
                              const at::Tensor& length, const at::Tensor& value,
                              bool upper) {
  check_segment_search(sorted, first, length, value);
  const auto sorted_c = sorted.contiguous();
  const auto first_c = first.contiguous();
  const auto length_c = length.contiguous();
  const auto value_c = value.contiguous();
  const int64_t* f = first_c.data_ptr<int64_t>();
  const int64_t* len = length_c.data_ptr<int64_t>();
  const int64_t size = sorted.numel();
  for (int64_t i = 0; i < first_c.numel(); ++i)
    TORCH_CHECK(f[i] >= 0 && len[i] >= 0 && f[i] <= size - len[i],
                kSegmentSearchOp, ": query ", i, " searches [", f[i], ", ",
                f[i] + len[i], "), outside 'sorted' ([0, ", size, "))");
  auto out = at::empty(value.sizes(), value.options().dtype(at::kLong));
  AT_DISPATCH_INDEX_TYPES(sorted.scalar_type(), "segment_search_cpu", [&] {
    search_runs(sorted_c.data_ptr<index_t>(), value_c.data_ptr<index_t>(),
                value_c.numel(), upper,
                [f, len](int64_t i) {
                  return std::make_pair(f[i], f[i] + len[i]);
                },
                out.data_ptr<int64_t>());
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("segment_search", &segment_search_cpu);
}

}  // namespace fusesample
