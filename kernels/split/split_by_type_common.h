// Argument checks of fusesample::split_by_type (contract: split_by_type.cpp),
// shared by its CPU and CUDA kernels.
#pragma once

#include <ATen/core/Tensor.h>

#include "../common/checks.h"

namespace fusesample {

constexpr const char* kSplitByTypeOp = "fusesample::split_by_type";

// One side (nodes or edges): ids, order and sorted types of one length,
// offsets with at least one entry, all on `ref`'s device.
inline void check_split_side(const char* ids_name, const at::Tensor& ids,
                             const char* order_name, const at::Tensor& order,
                             const char* type_name, const at::Tensor& type,
                             const char* offset_name, const at::Tensor& offset,
                             const at::Tensor& ref) {
  const char* op = kSplitByTypeOp;
  for (auto [name, t] : {std::pair{ids_name, &ids}, {order_name, &order},
                         {offset_name, &offset}}) {
    check_1d(op, name, *t);
    check_dtype(op, name, *t, at::kLong);
    check_same_device(op, name, *t, "node", ref);
  }
  check_1d(op, type_name, type);
  check_same_device(op, type_name, type, "node", ref);
  TORCH_CHECK(type.scalar_type() == at::kByte || type.scalar_type() == at::kInt,
              op, ": '", type_name, "' must be uint8 or int32, got ",
              type.scalar_type());
  TORCH_CHECK(order.numel() == ids.numel() && type.numel() == ids.numel(), op,
              ": '", ids_name, "', '", order_name, "' and '", type_name,
              "' must have one length, got ", ids.numel(), ", ",
              order.numel(), " and ", type.numel());
  TORCH_CHECK(offset.numel() >= 1, op, ": '", offset_name,
              "' needs at least one entry (types + 1)");
}

inline void check_split_by_type(const at::Tensor& node, const at::Tensor& node_order,
                                const at::Tensor& node_type, const at::Tensor& node_offset,
                                const at::Tensor& row, const at::Tensor& col,
                                const at::Tensor& edge, const at::Tensor& edge_order,
                                const at::Tensor& edge_type, const at::Tensor& edge_offset) {
  check_split_side("node", node, "node_order", node_order, "node_type", node_type,
                   "node_offset", node_offset, node);
  check_split_side("edge", edge, "edge_order", edge_order, "edge_type", edge_type,
                   "edge_offset", edge_offset, node);
  for (auto [name, t] : {std::pair{"row", &row}, {"col", &col}}) {
    check_1d(kSplitByTypeOp, name, *t);
    check_dtype(kSplitByTypeOp, name, *t, at::kLong);
    check_same_device(kSplitByTypeOp, name, *t, "node", node);
    TORCH_CHECK(t->numel() == edge.numel(), kSplitByTypeOp, ": '", name,
                "' must have as many entries as 'edge' (", edge.numel(),
                "), got ", t->numel());
  }
}

}  // namespace fusesample
