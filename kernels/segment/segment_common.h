// Argument checks shared by the CPU and CUDA kernels of segment_aggregate
// and segment_max_backward (contract: segment_aggregate.cpp). Shapes, dtypes
// and devices only: the layout's values are checked where they are read.
#pragma once

#include <ATen/core/Tensor.h>

#include <limits>
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

// segment_source_order's inputs (contract: segment_aggregate.cpp): the
// sorted sources are int32, so num_src must fit one.
inline void check_segment_source_order(const char* op, const at::Tensor& src, int64_t num_src) {
  check_1d(op, "src", src);
  check_index_dtype(op, "src", src);
  TORCH_CHECK(num_src >= 0 && num_src < std::numeric_limits<int32_t>::max(), op,
              ": 'num_src' must lie in [0, 2^31 - 1), got ", num_src);
}

// segment_aggregate_backward's optional grouping by source (contract:
// segment_aggregate.cpp): all three or none; dtypes of segment_source_order,
// shapes of its result for src or a longer src' (key and slot [E' >= E],
// ptr [num_src' + 1 >= num_src + 1]). Whether one is given.
inline bool check_source_order(const char* op, const at::Tensor& src, int64_t num_src,
                               const c10::optional<at::Tensor>& key,
                               const c10::optional<at::Tensor>& slot,
                               const c10::optional<at::Tensor>& ptr) {
  const int given = key.has_value() + slot.has_value() + ptr.has_value();
  TORCH_CHECK(given == 0 || given == 3, op,
              ": 'order_key', 'order_slot' and 'order_ptr' go together (all or none)");
  if (given == 0) return false;
  check_dtype(op, "order_key", *key, at::kInt);
  check_dtype(op, "order_slot", *slot, at::kLong);
  check_dtype(op, "order_ptr", *ptr, at::kLong);
  for (const auto* t : {&*key, &*slot, &*ptr}) check_same_device(op, "order", *t, "src", src);
  TORCH_CHECK(key->dim() == 1 && slot->dim() == 1 && key->numel() >= src.numel() &&
                  slot->numel() == key->numel() && ptr->dim() == 1 &&
                  ptr->numel() >= num_src + 1,
              op, ": the order must be segment_source_order(src', num_src')'s, of src or a "
              "longer src' that it is a prefix of: key and slot [E' >= ", src.numel(),
              "], ptr [>= ", num_src + 1, "]; got ", key->sizes(), ", ", slot->sizes(), ", ",
              ptr->sizes());
  return true;
}

// segment_aggregate_backward's inputs beyond the forward's; returns the heads.
struct SegmentBackwardArgs {
  SegmentReduce reduce;
  int64_t heads;
  bool ordered;  // a grouping by source was given
};

inline SegmentBackwardArgs check_segment_aggregate_backward(
    const char* op, const at::Tensor& ptr, const at::Tensor& src, const at::Tensor& dst,
    const c10::optional<at::Tensor>& value, const at::Tensor& grad, const at::Tensor& arg,
    int64_t num_src, c10::string_view reduce_name, const c10::optional<at::Tensor>& order_key,
    const c10::optional<at::Tensor>& order_slot, const c10::optional<at::Tensor>& order_ptr) {
  const SegmentReduce reduce = parse_segment_reduce(op, std::string(reduce_name));
  TORCH_CHECK(num_src >= 0, op, ": 'num_src' must be >= 0, got ", num_src);
  TORCH_CHECK(grad.dim() == 2 && grad.size(0) == ptr.numel() - 1, op, ": 'grad' must be [",
              ptr.numel() - 1, ", F] (a row per target), got ", grad.sizes());
  const int64_t heads = check_segment_aggregate(op, ptr, src, value, grad, reduce);
  check_1d(op, "dst", dst);
  check_index_dtype(op, "dst", dst);
  check_same_device(op, "dst", dst, "ptr", ptr);
  TORCH_CHECK(dst.numel() == src.numel(), op, ": 'dst' and 'src' differ in length (",
              dst.numel(), " vs ", src.numel(), ")");
  if (reduce == SegmentReduce::kMax) {
    check_dtype(op, "arg", arg, at::kLong);
    check_same_device(op, "arg", arg, "ptr", ptr);
    TORCH_CHECK(arg.sizes() == grad.sizes(), op, ": 'arg' ", arg.sizes(), " and 'grad' ",
                grad.sizes(), " must be one [R, F] shape");
  }
  return {reduce, heads,
          check_source_order(op, src, num_src, order_key, order_slot, order_ptr)};
}

// segment_slot_dot's inputs (contract: segment_slot_dot.cpp); 'max' has no
// slot weights to differentiate.
inline void check_segment_slot_dot(const char* op, const at::Tensor& ptr, const at::Tensor& src,
                                   const at::Tensor& grad, const at::Tensor& x, int64_t heads,
                                   SegmentReduce reduce) {
  TORCH_CHECK(reduce != SegmentReduce::kMax, op, ": 'reduce' must be 'sum' or 'mean'");
  check_segment_aggregate(op, ptr, src, c10::nullopt, x, reduce);
  check_floating(op, "grad", grad, "ptr", ptr);
  TORCH_CHECK(grad.scalar_type() == x.scalar_type(), op, ": 'grad' is ", grad.scalar_type(),
              " but 'x' is ", x.scalar_type());
  TORCH_CHECK(grad.dim() == 2 && grad.size(0) == ptr.numel() - 1 && grad.size(1) == x.size(1),
              op, ": 'grad' must be [", ptr.numel() - 1, ", ", x.size(1),
              "] (a row per target, x's width), got ", grad.sizes());
  TORCH_CHECK(heads >= 1 && x.size(1) % heads == 0, op, ": 'heads' must be >= 1 and divide ",
              "x's ", x.size(1), " columns, got ", heads);
}

// segment_softmax's inputs (contract: segment_softmax.cpp): a row's slot
// scores [E, heads] and the self-loops' [L, heads], L <= rows, one floating
// dtype; `what` names them ("score" forward, "alpha" backward).
inline void check_segment_softmax(const char* op, const at::Tensor& ptr, const at::Tensor& score,
                                  const at::Tensor& self_score, const char* what,
                                  const char* self_what) {
  check_pointer(op, "ptr", ptr);
  check_floating(op, what, score, "ptr", ptr);
  check_floating(op, self_what, self_score, "ptr", ptr);
  TORCH_CHECK(score.dim() == 2, op, ": '", what, "' must be [E, heads], got shape ",
              score.sizes());
  TORCH_CHECK(self_score.dim() == 2 && self_score.size(1) == score.size(1) &&
                  self_score.size(0) <= ptr.numel() - 1,
              op, ": '", self_what, "' must be [L, ", score.size(1), "] with L <= ",
              ptr.numel() - 1, " (the rows), got shape ", self_score.sizes());
  TORCH_CHECK(self_score.scalar_type() == score.scalar_type(), op, ": '", self_what, "' is ",
              self_score.scalar_type(), " but '", what, "' is ", score.scalar_type());
}

inline void check_segment_softmax_backward(const char* op, const at::Tensor& ptr,
                                           const at::Tensor& alpha,
                                           const at::Tensor& alpha_self, const at::Tensor& grad,
                                           const at::Tensor& grad_self) {
  check_segment_softmax(op, ptr, alpha, alpha_self, "alpha", "alpha_self");
  check_same_device(op, "grad", grad, "ptr", ptr);
  check_same_device(op, "grad_self", grad_self, "ptr", ptr);
  TORCH_CHECK(grad.sizes() == alpha.sizes() && grad.scalar_type() == alpha.scalar_type(), op,
              ": 'grad' must be ", alpha.scalar_type(), " ", alpha.sizes(), " as 'alpha', got ",
              grad.scalar_type(), " ", grad.sizes());
  TORCH_CHECK(grad_self.sizes() == alpha_self.sizes() &&
                  grad_self.scalar_type() == alpha_self.scalar_type(),
              op, ": 'grad_self' must be ", alpha_self.scalar_type(), " ", alpha_self.sizes(),
              " as 'alpha_self', got ", grad_self.scalar_type(), " ", grad_self.sizes());
}

}  // namespace fusesample
