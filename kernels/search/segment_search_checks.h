// The argument checks of fusesample::segment_search that both devices make
// (contract: segment_search.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include "../common/checks.h"

namespace fusesample {

constexpr const char* kSegmentSearchOp = "fusesample::segment_search";

inline void check_segment_search(const at::Tensor& sorted,
                                 const at::Tensor& first,
                                 const at::Tensor& length,
                                 const at::Tensor& value) {
  const char* op = kSegmentSearchOp;
  check_1d(op, "sorted", sorted);
  check_1d(op, "first", first);
  check_1d(op, "length", length);
  check_1d(op, "value", value);
  check_index_dtype(op, "sorted", sorted);
  check_dtype(op, "first", first, at::kLong);
  check_dtype(op, "length", length, at::kLong);
  TORCH_CHECK(value.scalar_type() == sorted.scalar_type(), op,
              ": 'value' must have 'sorted''s dtype (", sorted.scalar_type(),
              "), got ", value.scalar_type());
  TORCH_CHECK(first.numel() == value.numel() && length.numel() == value.numel(),
              op, ": 'first', 'length' and 'value' must have one entry per "
              "query, got ", first.numel(), ", ", length.numel(), " and ",
              value.numel());
  check_same_device(op, "first", first, "sorted", sorted);
  check_same_device(op, "length", length, "sorted", sorted);
  check_same_device(op, "value", value, "sorted", sorted);
}

}  // namespace fusesample
