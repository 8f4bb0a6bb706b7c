// CPU kernel of fusesample::csc_from_coo (contract: ../csc_from_coo.cpp).
//
// One stable counting sort by target, O(E) -- an argsort of 123M keys takes
// several times longer on a few cores. The scatter is serial because
// stability needs the edges visited in order.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <vector>

#include "../../common/checks.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::csc_from_coo";

// Stable counting sort of the edges 0..E-1 by key[edge]: fills `sorted`
// with edge ids and returns the bucket offsets [num_keys + 1].
std::vector<int64_t> counting_sort(const int64_t* key, int64_t num_keys,
                                   int64_t num_edges, int64_t* sorted) {
  std::vector<int64_t> offsets(num_keys + 1, 0);
  for (int64_t e = 0; e < num_edges; ++e) ++offsets[key[e] + 1];
  for (int64_t i = 0; i < num_keys; ++i) offsets[i + 1] += offsets[i];
  std::vector<int64_t> cursor(offsets.begin(), offsets.end() - 1);
  for (int64_t e = 0; e < num_edges; ++e) sorted[cursor[key[e]]++] = e;
  return offsets;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> csc_from_coo_cpu(
    const at::Tensor& row, const at::Tensor& col, int64_t num_nodes) {
  check_1d(kOp, "row", row);
  check_1d(kOp, "col", col);
  check_dtype(kOp, "row", row, at::kLong);
  check_dtype(kOp, "col", col, at::kLong);
  check_same_device(kOp, "col", col, "row", row);
  TORCH_CHECK(row.numel() == col.numel(), kOp, ": 'row' has ", row.numel(),
              " entries but 'col' has ", col.numel());
  TORCH_CHECK(num_nodes >= 0, kOp, ": 'num_nodes' must be >= 0, got ", num_nodes);
  check_ids_in_range_cpu(kOp, "row", row, num_nodes);
  check_ids_in_range_cpu(kOp, "col", col, num_nodes);

  const auto row_c = row.contiguous();
  const auto col_c = col.contiguous();
  const int64_t* r = row_c.data_ptr<int64_t>();
  const int64_t* c = col_c.data_ptr<int64_t>();
  const int64_t num_edges = row.numel();

  auto colptr = at::empty({num_nodes + 1}, at::kLong);
  auto out_row = at::empty({num_edges}, at::kLong);
  auto perm = at::empty({num_edges}, at::kLong);
  int64_t* perm_p = perm.data_ptr<int64_t>();
  const auto colptr_v = counting_sort(c, num_nodes, num_edges, perm_p);
  std::copy(colptr_v.begin(), colptr_v.end(), colptr.data_ptr<int64_t>());
  int64_t* out_row_p = out_row.data_ptr<int64_t>();
  at::parallel_for(0, num_edges, 1 << 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out_row_p[i] = r[perm_p[i]];
  });
  return std::make_tuple(colptr, out_row, perm);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("csc_from_coo", &csc_from_coo_cpu);
}

}  // namespace fusesample
