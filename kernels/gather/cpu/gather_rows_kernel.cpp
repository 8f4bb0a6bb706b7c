// CPU kernel of fusesample::gather_rows (contract: ../gather_rows.cpp):
// at::index_select is already a parallel row copy on the CPU.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "../../common/checks.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::gather_rows";

at::Tensor gather_rows_cpu(const at::Tensor& src, const at::Tensor& index,
                           bool check_index) {
  check_gather_rows(kOp, src, index);
  if (check_index) check_ids_in_range_cpu(kOp, "index", index, src.size(0));
  return at::index_select(src, 0, index);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("gather_rows", &gather_rows_cpu);
}

}  // namespace fusesample
