// fusesample::grouped_induced_edges (contract in grouped_induced_edges.cpp),
// callable from C++ without the dispatcher (shadow_subgraph.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

namespace fusesample {

using GroupedEdges = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

GroupedEdges grouped_induced_edges(const at::Tensor& ptr, const at::Tensor& nbr,
                                   const c10::optional<at::Tensor>& edge_id,
                                   const at::Tensor& node, const at::Tensor& group,
                                   const at::Tensor& key, int64_t num_nodes,
                                   bool parallel_edges, bool ordered, int64_t hub_factor,
                                   int64_t budget);

}  // namespace fusesample
