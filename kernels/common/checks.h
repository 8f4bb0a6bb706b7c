// Argument checks shared by the CPU and CUDA kernels of every op. Messages
// name the op and the argument so a user can tell what to fix.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/aminmax.h>

#include <initializer_list>
#include <utility>

#include "value_checks.h"

namespace fusesample {

inline void check_1d(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK(t.dim() == 1, op, ": '", name, "' must be 1-dimensional, got ",
              t.dim(), " dimensions (shape ", t.sizes(), ")");
}

inline void check_dtype(const char* op, const char* name, const at::Tensor& t,
                        at::ScalarType dtype) {
  TORCH_CHECK(t.scalar_type() == dtype, op, ": '", name, "' must be ", dtype,
              ", got ", t.scalar_type());
}

inline void check_index_dtype(const char* op, const char* name,
                              const at::Tensor& t) {
  TORCH_CHECK(t.scalar_type() == at::kLong || t.scalar_type() == at::kInt, op,
              ": '", name, "' must be int64 or int32, got ", t.scalar_type());
}

// `t` is in pinned host memory and `ref` on a GPU: the GPU reads `t` in
// place (zero-copy, through unified addressing).
inline bool gpu_reads_pinned(const at::Tensor& t, const at::Tensor& ref) {
  return ref.is_cuda() && t.is_cpu() && t.is_pinned();
}

inline void check_same_device(const char* op, const char* name,
                              const at::Tensor& t, const char* ref_name,
                              const at::Tensor& ref) {
  TORCH_CHECK(t.device() == ref.device(), op, ": '", name, "' is on ",
              t.device(), " but '", ref_name, "' is on ", ref.device(),
              "; move them to one device");
}

// A compressed sparse layout: int64 pointers with at least one entry and 1-D
// int32/int64 indices on their device. The names are the caller's
// (colptr/row for the sampler's CSC, rowptr/col for the SpMM's CSR).
inline void check_compressed(const char* op, const char* ptr_name,
                             const at::Tensor& ptr, const char* idx_name,
                             const at::Tensor& idx, const char* count_name) {
  check_1d(op, ptr_name, ptr);
  check_dtype(op, ptr_name, ptr, at::kLong);
  TORCH_CHECK(ptr.numel() >= 1, op, ": '", ptr_name, "' needs ", count_name,
              " + 1 >= 1 entries, got 0");
  check_1d(op, idx_name, idx);
  check_index_dtype(op, idx_name, idx);
  check_same_device(op, idx_name, idx, ptr_name, ptr);
}

// An optional per-slot array of a compressed graph: 1-D, of `dtype`, one
// entry per slot of `idx` (named `idx_name`), on the device of `ptr`.
inline void check_slot_values(const char* op, const char* name,
                              const c10::optional<at::Tensor>& t,
                              at::ScalarType dtype, const char* idx_name,
                              const at::Tensor& idx, const char* ptr_name,
                              const at::Tensor& ptr) {
  if (!t.has_value()) return;
  check_1d(op, name, *t);
  check_dtype(op, name, *t, dtype);
  check_same_device(op, name, *t, ptr_name, ptr);
  TORCH_CHECK(t->numel() == idx.numel(), op, ": '", name, "' has ", t->numel(),
              " entries but '", idx_name, "' has ", idx.numel());
}

// A CSC graph: colptr [N + 1] int64 (64-bit offsets: graphs may have more
// than 2^31 edges), row [E] int32/int64 sources sorted by target, optional
// edge_id [E] int64 (original edge ids, i.e. the permutation CSC applied).
inline void check_csc(const char* op, const at::Tensor& colptr,
                      const at::Tensor& row,
                      const c10::optional<at::Tensor>& edge_id) {
  check_compressed(op, "colptr", colptr, "row", row, "num_nodes");
  check_slot_values(op, "edge_id", edge_id, at::kLong, "row", row, "colptr",
                    colptr);
}

// A 1-D int64 index tensor on the device of `ref` (by default the graph's
// `colptr`: seeds, node sets).
inline void check_node_ids(const char* op, const char* name,
                           const at::Tensor& ids, const at::Tensor& ref,
                           const char* ref_name = "colptr") {
  check_1d(op, name, ids);
  check_dtype(op, name, ids, at::kLong);
  check_same_device(op, name, ids, ref_name, ref);
}

// A graph in host memory that a GPU samples in place (zero-copy, through
// unified addressing): seeds on a CUDA device, every graph tensor pinned
// and contiguous (a copy would be neither).
inline void check_host_graph(const char* op, const at::Tensor& seed,
                             std::initializer_list<std::pair<const char*, const at::Tensor*>> graph) {
  check_1d(op, "seed", seed);
  check_dtype(op, "seed", seed, at::kLong);
  TORCH_CHECK(seed.is_cuda(), op, ": a graph in host memory is sampled by a "
              "GPU: 'seed' must be on a CUDA device, got ", seed.device());
  for (const auto& [name, t] : graph) {
    if (t == nullptr) continue;
    TORCH_CHECK(t->is_cpu() && t->is_pinned() && t->is_contiguous(), op, ": '",
                name, "' must be contiguous in pinned host memory to be read "
                "by the GPU in place (tensor.pin_memory()), or on ",
                seed.device());
  }
}

// Fan-outs: -1 (all in-edges) or a count.
inline void check_fanouts(const char* op, at::IntArrayRef num_neighbors) {
  for (size_t h = 0; h < num_neighbors.size(); ++h)
    TORCH_CHECK(num_neighbors[h] >= -1, op, ": 'num_neighbors[", h, "]' is ",
                num_neighbors[h],
                "; use a count >= 0, or -1 for all neighbours");
}

// A typed CSC (heterogeneous sampling): T >= 1 segments per node in colptr
// and T fan-outs per hop.
inline void check_edge_types(const char* op, const at::Tensor& colptr,
                             at::IntArrayRef num_neighbors, int64_t num_types) {
  TORCH_CHECK(num_types >= 1, op, ": 'num_edge_types' must be >= 1, got ",
              num_types);
  TORCH_CHECK((colptr.numel() - 1) % num_types == 0, op, ": 'colptr' has ",
              colptr.numel(), " entries, which is not num_nodes * num_edge_types",
              " + 1 for num_edge_types = ", num_types);
  TORCH_CHECK(static_cast<int64_t>(num_neighbors.size()) % num_types == 0, op,
              ": 'num_neighbors' has ", num_neighbors.size(), " entries, which is"
              " not hops * num_edge_types for num_edge_types = ", num_types);
}

// A typed sample's type tables (sampler/type_counts.h): all empty, or
// node_type_offsets [NT+1] from 0 to num_nodes, edge_type_offsets [T+1] from
// 0 to at least num_edges, both ascending, and edge_type_nodes [2T] node types.
inline void check_typing(const char* op, int64_t num_nodes, int64_t num_edges,
                         int64_t num_types, at::IntArrayRef node_type_offsets,
                         at::IntArrayRef edge_type_offsets,
                         at::IntArrayRef edge_type_nodes) {
  if (node_type_offsets.empty() && edge_type_offsets.empty() &&
      edge_type_nodes.empty())
    return;
  // (edge ids may name more edges than the CSC holds: weighted sampling
  // leaves zero-weight edges out, so the edge offsets end at >= num_edges)
  auto ascending = [](at::IntArrayRef v, int64_t last, bool at_least = false) {
    if (v.empty() || v.front() != 0) return false;
    if (at_least ? v.back() < last : v.back() != last) return false;
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] < v[i - 1]) return false;
    return true;
  };
  const int64_t NT = static_cast<int64_t>(node_type_offsets.size()) - 1;
  TORCH_CHECK(NT >= 1 && ascending(node_type_offsets, num_nodes), op,
              ": 'node_type_offsets' must ascend from 0 to the number of nodes (",
              num_nodes, "), got ", node_type_offsets);
  TORCH_CHECK(static_cast<int64_t>(edge_type_offsets.size()) == num_types + 1 &&
                  ascending(edge_type_offsets, num_edges, true),
              op, ": 'edge_type_offsets' must have num_edge_types + 1 = ",
              num_types + 1, " entries ascending from 0 to at least the number "
              "of edges (", num_edges, "), got ", edge_type_offsets);
  TORCH_CHECK(static_cast<int64_t>(edge_type_nodes.size()) == 2 * num_types, op,
              ": 'edge_type_nodes' must hold (source, target) node types of the ",
              num_types, " edge types, got ", edge_type_nodes.size(), " entries");
  for (int64_t t : edge_type_nodes)
    TORCH_CHECK(t >= 0 && t < NT, op, ": 'edge_type_nodes' holds node type ", t,
                " outside [0, ", NT, ")");
}

// gather_rows' arguments: src with a row dimension, a 1-D int64 index on
// src's device.
inline void check_gather_rows(const char* op, const at::Tensor& src,
                              const at::Tensor& index) {
  TORCH_CHECK(src.dim() >= 1, op, ": 'src' must have at least 1 dimension");
  check_1d(op, "index", index);
  check_dtype(op, "index", index, at::kLong);
  // A GPU may read a pinned host 'src' (zero-copy); nothing else crosses.
  if (!gpu_reads_pinned(src, index))
    check_same_device(op, "index", index, "src", src);
}

// gather_rows_cached's cache: src's row shape and dtype, and the slot of
// every source row, on index's device.
inline void check_row_cache(const char* op, const at::Tensor& src,
                            const at::Tensor& cache,
                            const at::Tensor& cache_slot,
                            const at::Tensor& index, const at::Tensor& hits) {
  check_gather_rows(op, src, index);
  TORCH_CHECK(cache.dim() == src.dim() && cache.sizes().slice(1) ==
                  src.sizes().slice(1) && cache.scalar_type() == src.scalar_type(),
              op, ": 'cache' must hold rows of 'src' (shape [C",
              src.sizes().slice(1), "], ", src.scalar_type(), "), got ",
              cache.sizes(), " ", cache.scalar_type());
  check_same_device(op, "cache", cache, "index", index);
  check_1d(op, "cache_slot", cache_slot);
  check_dtype(op, "cache_slot", cache_slot, at::kInt);
  check_same_device(op, "cache_slot", cache_slot, "index", index);
  TORCH_CHECK(cache_slot.numel() == src.size(0), op,
              ": 'cache_slot' needs one entry per row of 'src' (", src.size(0),
              "), got ", cache_slot.numel());
  TORCH_CHECK(hits.numel() == 1 && hits.scalar_type() == at::kLong, op,
              ": 'hits' must be a one-element int64 counter");
  check_same_device(op, "hits", hits, "index", index);
}

// A floating-point tensor (features, edge values) on the device of `ref`.
inline void check_floating(const char* op, const char* name, const at::Tensor& t,
                           const char* ref_name, const at::Tensor& ref) {
  TORCH_CHECK(at::isFloatingType(t.scalar_type()), op, ": '", name,
              "' must be float64, float32, float16 or bfloat16, got ",
              t.scalar_type());
  check_same_device(op, name, t, ref_name, ref);
}

// Temporal / weighted sampling inputs (sampler/segment_rule.h): per-CSC-slot
// int64 times with per-seed int64 seed times (temporal sampling is disjoint),
// or per-CSC-slot float64 prefix sums of the weights; not both.
inline void check_rule(const char* op, const at::Tensor& row, const at::Tensor& seed,
                       bool disjoint, bool replace, const c10::optional<at::Tensor>& edge_time,
                       const c10::optional<at::Tensor>& seed_time, bool temporal_last,
                       const c10::optional<at::Tensor>& weight_cumsum) {
  TORCH_CHECK(edge_time.has_value() == seed_time.has_value(), op,
              ": 'edge_time' and 'seed_time' come together (temporal sampling)");
  if (edge_time.has_value()) {
    TORCH_CHECK(disjoint, op, ": temporal sampling needs disjoint=True (each "
                "node is sampled for one seed, whose time bounds its subtree)");
    for (auto [name, t, n] : {std::tuple{"edge_time", &*edge_time, row.numel()},
                              {"seed_time", &*seed_time, seed.numel()}}) {
      check_1d(op, name, *t);
      check_dtype(op, name, *t, at::kLong);
      check_same_device(op, name, *t, "row", row);
      TORCH_CHECK(t->numel() == n, op, ": '", name, "' must have ", n,
                  " entries, got ", t->numel());
    }
  }
  if (weight_cumsum.has_value()) {
    // (with temporal_last the latest k admitted in-edges are taken as they
    // are; draws with replacement among them would start mid-segment, where
    // the prefix sums do not)
    TORCH_CHECK(!(edge_time.has_value() && temporal_last && replace), op,
                ": weighted sampling with replacement under temporal_strategy='last' "
                "is not supported (the latest k in-edges are taken without replacement)");
    check_1d(op, "weight_cumsum", *weight_cumsum);
    check_dtype(op, "weight_cumsum", *weight_cumsum, at::kDouble);
    check_same_device(op, "weight_cumsum", *weight_cumsum, "row", row);
    TORCH_CHECK(weight_cumsum->numel() == row.numel(), op,
                ": 'weight_cumsum' must have ", row.numel(), " entries, got ",
                weight_cumsum->numel());
  }
}

// On the CPU the value checks are cheap; CUDA kernels check the same ranges
// on the device and report through an error flag instead of syncing.
// `lowest` is -1 where -1 marks padding.
inline void check_ids_in_range_cpu(const char* op, const char* name,
                                   const at::Tensor& ids, int64_t bound,
                                   int64_t lowest = 0) {
  if (ids.numel() == 0) return;
  auto minmax = at::aminmax(ids);
  const int64_t lo = std::get<0>(minmax).item<int64_t>();
  const int64_t hi = std::get<1>(minmax).item<int64_t>();
  TORCH_CHECK(lo >= lowest && hi < bound, op, ": '", name,
              "' holds ids in [", lo, ", ", hi, "] but must lie in [", lowest,
              ", ", bound, ")");
}

}  // namespace fusesample
