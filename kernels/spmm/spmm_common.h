// Argument checks shared by the CPU and CUDA kernels of spmm, sddmm and
// csr_softmax (contract: spmm.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "../common/checks.h"

namespace fusesample {

inline void check_csr(const char* op, const at::Tensor& rowptr,
                      const at::Tensor& col) {
  check_compressed(op, "rowptr", rowptr, "col", col, "num_rows");
}

// Heads of an edge-value tensor: [E] -> 1, [E, H] -> H.
inline int64_t check_edge_values(const char* op, const char* name,
                                 const at::Tensor& v, const at::Tensor& col,
                                 const at::Tensor& rowptr) {
  check_floating(op, name, v, "rowptr", rowptr);
  TORCH_CHECK((v.dim() == 1 || v.dim() == 2) && v.size(0) == col.numel(), op,
              ": '", name, "' must have shape [", col.numel(), "] or [",
              col.numel(), ", heads], got ", v.sizes());
  return v.dim() == 2 ? v.size(1) : 1;
}

// 'hub-subwarp': the rows up to the hub threshold packed several to a warp
// (as 'subwarp'), the heavier ones in chunks of a thread block (as 'hub').
enum class SpmmVariant { kWarp, kSubwarp, kHub, kHubSubwarp };

inline SpmmVariant parse_spmm_variant(const char* op, const std::string& v) {
  if (v == "warp" || v == "cpu") return SpmmVariant::kWarp;
  if (v == "subwarp") return SpmmVariant::kSubwarp;
  if (v == "hub-subwarp") return SpmmVariant::kHubSubwarp;
  TORCH_CHECK(v == "hub", op, ": 'variant' must be 'warp', 'subwarp', 'hub' or "
              "'hub-subwarp', got '", v, "'");
  return SpmmVariant::kHub;
}

// Variants that send the rows above hub_threshold to the block kernel.
inline bool splits_hubs(SpmmVariant v) {
  return v == SpmmVariant::kHub || v == SpmmVariant::kHubSubwarp;
}

// Variants whose row kernel packs several rows per warp.
inline bool packs_rows(SpmmVariant v) {
  return v == SpmmVariant::kSubwarp || v == SpmmVariant::kHubSubwarp;
}

inline bool parse_spmm_mean(const char* op, const std::string& reduce) {
  TORCH_CHECK(reduce == "sum" || reduce == "add" || reduce == "mean", op,
              ": 'reduce' must be 'sum' or 'mean', got '", reduce, "'");
  return reduce == "mean";
}

// Heads of spmm's value (1 without value); checks x's width divides by them.
inline int64_t check_spmm(const char* op, const at::Tensor& rowptr,
                          const at::Tensor& col,
                          const c10::optional<at::Tensor>& value,
                          const at::Tensor& x) {
  check_csr(op, rowptr, col);
  check_floating(op, "x", x, "rowptr", rowptr);
  TORCH_CHECK(x.dim() == 2, op, ": 'x' must be 2-dimensional [N, F], got shape ",
              x.sizes());
  int64_t heads = 1;
  if (value.has_value()) {
    heads = check_edge_values(op, "value", *value, col, rowptr);
    TORCH_CHECK(value->scalar_type() == x.scalar_type(), op,
                ": 'value' is ", value->scalar_type(), " but 'x' is ",
                x.scalar_type());
    TORCH_CHECK(x.size(1) % heads == 0, op, ": 'x' has ", x.size(1),
                " columns, not a multiple of the ", heads, " heads of 'value'");
  }
  // Columns index rows of x.
  check_graph_values(op, "rowptr", rowptr, "col", col, x.size(0));
  return heads;
}

// spmm's optional light-row order: [L] int64 beside rowptr, at most one
// entry per row (its values are not checked: that would cost a host sync).
inline void check_light_rows(const char* op, const c10::optional<at::Tensor>& light_rows,
                             const at::Tensor& rowptr) {
  if (!light_rows.has_value()) return;
  check_dtype(op, "light_rows", *light_rows, at::kLong);
  check_same_device(op, "light_rows", *light_rows, "rowptr", rowptr);
  TORCH_CHECK(light_rows->dim() == 1 && light_rows->numel() < rowptr.numel(), op,
              ": 'light_rows' must be 1-dimensional with at most ", rowptr.numel() - 1,
              " row ids (CSRGraph.light_rows), got shape ", light_rows->sizes());
}

// sddmm's inputs: [rows, C] or [rows, heads, C], one dtype, agreeing beyond
// the first dimension; a's rows are the CSR's rows.
inline void check_sddmm(const char* op, const at::Tensor& rowptr,
                        const at::Tensor& col, const at::Tensor& a,
                        const at::Tensor& b) {
  check_csr(op, rowptr, col);
  check_floating(op, "a", a, "rowptr", rowptr);
  check_floating(op, "b", b, "rowptr", rowptr);
  TORCH_CHECK((a.dim() == 2 || a.dim() == 3) && a.dim() == b.dim() &&
                  a.sizes().slice(1) == b.sizes().slice(1) &&
                  a.scalar_type() == b.scalar_type(),
              op, ": 'a' ", a.sizes(), " and 'b' ", b.sizes(),
              " must be [rows, C] or [rows, heads, C] of one dtype, agreeing "
              "beyond their first dimension");
  TORCH_CHECK(a.size(0) == rowptr.numel() - 1, op, ": 'a' has ", a.size(0),
              " rows but 'rowptr' describes ", rowptr.numel() - 1);
  check_graph_values(op, "rowptr", rowptr, "col", col, b.size(0));
}

// csr_softmax's edge scores: [E] or [E, heads]; returns the heads.
inline int64_t check_softmax_value(const char* op, const at::Tensor& rowptr,
                                   const at::Tensor& value) {
  check_1d(op, "rowptr", rowptr);
  check_dtype(op, "rowptr", rowptr, at::kLong);
  check_floating(op, "value", value, "rowptr", rowptr);
  TORCH_CHECK(value.dim() == 1 || value.dim() == 2, op,
              ": 'value' must be [E] or [E, heads], got shape ", value.sizes());
  check_graph_pointer_values(op, "rowptr", rowptr, "value", value.size(0));
  return value.dim() == 2 ? value.size(1) : 1;
}

}  // namespace fusesample
