// fusesample::normalize_by_target's shared parts: its checks and the run of
// one target (host and device code, separately rounded sums: the CPU and
// CUDA kernels return the same bits).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/TypeCast.h>

#include <cstdint>
#include <vector>

#include "../common/checks.h"
#include "../common/det_math.h"

namespace fusesample {
namespace layer {

constexpr const char* kNormalizeOp = "fusesample::normalize_by_target";

// Returns the layers' edge counts (num_sampled_edges' entries).
inline std::vector<int64_t> check_normalize_inputs(
    const at::Tensor& weight, const at::Tensor& col,
    const at::Tensor& num_sampled_edges, at::ScalarType dtype) {
  check_1d(kNormalizeOp, "weight", weight);
  check_dtype(kNormalizeOp, "weight", weight, at::kDouble);
  check_1d(kNormalizeOp, "col", col);
  check_dtype(kNormalizeOp, "col", col, at::kLong);
  check_same_device(kNormalizeOp, "col", col, "weight", weight);
  TORCH_CHECK(col.numel() == weight.numel(), kNormalizeOp,
              ": 'col' needs one entry per weight (", weight.numel(), "), got ",
              col.numel());
  check_1d(kNormalizeOp, "num_sampled_edges", num_sampled_edges);
  check_dtype(kNormalizeOp, "num_sampled_edges", num_sampled_edges, at::kLong);
  TORCH_CHECK(num_sampled_edges.device().is_cpu(), kNormalizeOp,
              ": 'num_sampled_edges' must be a CPU tensor (the host sizes the "
              "layers by it)");
  const at::Tensor nse = num_sampled_edges.contiguous();
  const int64_t* p = nse.data_ptr<int64_t>();
  const std::vector<int64_t> counts(p, p + nse.numel());
  int64_t total = 0;
  bool counts_ok = true;
  for (const int64_t c : counts) {
    counts_ok = counts_ok && c >= 0;
    total += c;
  }
  TORCH_CHECK(counts_ok && total == weight.numel(), kNormalizeOp,
              ": 'num_sampled_edges' must be counts summing to the number of "
              "weights (", weight.numel(), ")");
  TORCH_CHECK(at::isFloatingType(dtype), kNormalizeOp,
              ": 'dtype' must be a floating type, got ", dtype);
  return counts;
}

// The run of edges into col[head] that starts at `head` (edges [head, end) of
// its layer): each weight divided by the run's sum, summed in edge order (0
// where the sum is not positive), written as out_t. Returns the run's end.
template <class out_t>
FS_HOST_DEVICE int64_t normalize_run(const double* w, const int64_t* col,
                                     int64_t head, int64_t end, out_t* out) {
  double sum = w[head];
  int64_t stop = head + 1;
  for (; stop < end && col[stop] == col[head]; ++stop) sum = FS_ADD(sum, w[stop]);
  for (int64_t k = head; k < stop; ++k)
    out[k] = c10::convert<out_t>(sum > 0.0 ? FS_DIV(w[k], sum) : 0.0);
  return stop;
}

}  // namespace layer
}  // namespace fusesample
