// CPU kernel of fusesample::segment_search (contract: ../segment_search.cpp):
// std::lower_bound / upper_bound per query in a parallel loop, after checking
// every run's bounds.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>

#include "../segment_search_checks.h"

namespace fusesample {
namespace {

template <typename index_t>
void search(const at::Tensor& sorted, const at::Tensor& first,
            const at::Tensor& length, const at::Tensor& value, bool upper,
            at::Tensor& out) {
  const index_t* s = sorted.data_ptr<index_t>();
  const int64_t* f = first.data_ptr<int64_t>();
  const int64_t* len = length.data_ptr<int64_t>();
  const index_t* v = value.data_ptr<index_t>();
  int64_t* o = out.data_ptr<int64_t>();
  at::parallel_for(0, value.numel(), 4096, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const index_t* begin = s + f[i];
      const index_t* end = begin + len[i];
      o[i] = (upper ? std::upper_bound(begin, end, v[i])
                    : std::lower_bound(begin, end, v[i])) - s;
    }
  });
}

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
    search<index_t>(sorted_c, first_c, length_c, value_c, upper, out);
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("segment_search", &segment_search_cpu);
}

}  // namespace fusesample
