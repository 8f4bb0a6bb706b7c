// Argument checks shared by the CPU and CUDA kernels of segment_aggregate
// and segment_max_backward (contract: segment_aggregate.cpp). Shapes, dtypes
// and devices only: the layout's values are checked where they are read.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "../common/checks.h"

namespace fusesample {

enum class SegmentReduce { kSum, kMean, kMax };

inline SegmentReduce parse_segment_reduce(const char* op, const std::string& r) {
  if (r == "sum" || r == "add") return SegmentReduce::kSum;
  if (r == "mean") return SegmentReduce::kMean;
  TORCH_CHECK(r == "max" || r == "amax", op,
              ": 'reduce' must be 'sum', 'mean' or 'max', got '", r, "'");
  return SegmentReduce::kMax;
}

inline void check_pointer(const char* op, const char* name, const at::Tensor& ptr) {
  check_1d(op, name, ptr);
  check_dtype(op, name, ptr, at::kLong);
  TORCH_CHECK(ptr.numel() >= 1, op, ": '", name, "' needs at least one entry (rows + 1)");
}

// Heads of the slot weights (1 without them).
inline int64_t check_segment_aggregate(const char* op, const at::Tensor& ptr,
                                       const at::Tensor& src,
                                       const c10::optional<at::Tensor>& value,
                                       const at::Tensor& x, SegmentReduce reduce) {
  check_pointer(op, "ptr", ptr);
  check_1d(op, "src", src);
  check_index_dtype(op, "src", src);
  check_same_device(op, "src", src, "ptr", ptr);
  check_floating(op, "x", x, "ptr", ptr);
  TORCH_CHECK(x.dim() == 2, op, ": 'x' must be [N, F], got shape ", x.sizes());
  if (!value.has_value()) return 1;
  TORCH_CHECK(reduce != SegmentReduce::kMax, op, ": 'max' takes no 'value'");
  check_floating(op, "value", *value, "ptr", ptr);
  TORCH_CHECK(value->scalar_type() == x.scalar_type(), op, ": 'value' is ",
              value->scalar_type(), " but 'x' is ", x.scalar_type());
  TORCH_CHECK((value->dim() == 1 || value->dim() == 2) && value->size(0) == src.numel(), op,
              ": 'value' must have shape [", src.numel(), "] or [", src.numel(),
              ", heads], got ", value->sizes());
  const int64_t heads = value->dim() == 2 ? value->size(1) : 1;
  TORCH_CHECK(heads > 0 && x.size(1) % heads == 0, op, ": 'x' has ", x.size(1),
              " columns, not a multiple of the ", heads, " heads of 'value'");
  return heads;
}

inline void check_segment_max_backward(const char* op, const at::Tensor& ptr_t,
                                       const at::Tensor& dst_t, const at::Tensor& slot_t,
                                       const at::Tensor& arg, const at::Tensor& grad,
                                       int64_t num_src) {
  check_pointer(op, "ptr_t", ptr_t);
  TORCH_CHECK(ptr_t.numel() == num_src + 1, op, ": 'ptr_t' has ", ptr_t.numel(),
              " entries but num_src + 1 = ", num_src + 1);
  check_1d(op, "dst_t", dst_t);
  check_1d(op, "slot_t", slot_t);
  check_index_dtype(op, "dst_t", dst_t);
  check_dtype(op, "slot_t", slot_t, at::kLong);
  TORCH_CHECK(dst_t.numel() == slot_t.numel(), op, ": 'dst_t' and 'slot_t' differ in length (",
              dst_t.numel(), " vs ", slot_t.numel(), ")");
  check_same_device(op, "dst_t", dst_t, "ptr_t", ptr_t);
  check_same_device(op, "slot_t", slot_t, "ptr_t", ptr_t);
  check_floating(op, "grad", grad, "ptr_t", ptr_t);
  check_dtype(op, "arg", arg, at::kLong);
  check_same_device(op, "arg", arg, "ptr_t", ptr_t);
  TORCH_CHECK(grad.dim() == 2 && arg.sizes() == grad.sizes(), op, ": 'arg' ", arg.sizes(),
              " and 'grad' ", grad.sizes(), " must be one [R, F] shape");
}

}  // namespace fusesample
