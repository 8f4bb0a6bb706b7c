// Argument checks and small definitions shared by the CPU and CUDA kernels
// of sample_aggregate and its backward (contract: sample_aggregate.cpp).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

#include <string>

#include "../common/checks.h"

namespace fusesample {

enum class Reduce { kSum, kMean, kMax };

inline Reduce parse_reduce(const char* op, const std::string& reduce) {
  if (reduce == "sum" || reduce == "add") return Reduce::kSum;
  if (reduce == "mean") return Reduce::kMean;
  TORCH_CHECK(reduce == "max", op,
              ": 'reduce' must be 'sum', 'mean' or 'max', got '", reduce, "'");
  return Reduce::kMax;
}

inline void check_features(const char* op, const char* name, const at::Tensor& x,
                           const at::Tensor& colptr) {
  TORCH_CHECK(x.dim() == 2, op, ": '", name, "' must be 2-dimensional [rows, F], got shape ",
              x.sizes());
  check_floating(op, name, x, "colptr", colptr);
}

inline void check_sample_aggregate(const char* op, const at::Tensor& colptr,
                                   const at::Tensor& row, const at::Tensor& x,
                                   const at::Tensor& target,
                                   int64_t num_neighbors) {
  check_csc(op, colptr, row, c10::nullopt);
  check_features(op, "x", x, colptr);
  check_node_ids(op, "target", target, colptr);
  // Sources are rows of x (the graph may be bipartite).
  const int64_t max_source = check_graph_values(
      op, "colptr", colptr, "row", row,
      std::numeric_limits<int64_t>::max()).second;
  TORCH_CHECK(max_source < x.size(0), op, ": 'row' holds source id ",
              max_source, " but 'x' has only ", x.size(0), " rows");
  TORCH_CHECK(num_neighbors >= -1, op, ": 'num_neighbors' is ", num_neighbors,
              "; use a count >= 0, or -1 for all neighbours");
}

// nbr's width: k slots per target, none for k = -1 (the graph is replayed).
inline int64_t nbr_width(int64_t num_neighbors) {
  return num_neighbors < 0 ? 0 : num_neighbors;
}

inline void check_sample_aggregate_backward(
    const char* op, const at::Tensor& grad_out, const at::Tensor& colptr,
    const at::Tensor& row, const at::Tensor& target, const at::Tensor& nbr,
    const at::Tensor& arg, int64_t num_neighbors, Reduce reduce,
    int64_t num_src) {
  check_csc(op, colptr, row, c10::nullopt);
  check_features(op, "grad_out", grad_out, colptr);
  check_node_ids(op, "target", target, colptr);
  TORCH_CHECK(grad_out.size(0) == target.numel(), op, ": 'grad_out' has ",
              grad_out.size(0), " rows but 'target' has ", target.numel());
  TORCH_CHECK(num_src >= 0, op, ": 'num_src' must be >= 0, got ", num_src);
  const int64_t max_source = check_graph_values(
      op, "colptr", colptr, "row", row,
      std::numeric_limits<int64_t>::max()).second;
  TORCH_CHECK(max_source < num_src, op, ": 'row' holds source id ",
              max_source, ", outside [0, num_src = ", num_src, ")");
  check_dtype(op, "nbr", nbr, at::kLong);
  check_same_device(op, "nbr", nbr, "colptr", colptr);
  TORCH_CHECK(nbr.dim() == 2 && nbr.size(0) == target.numel() &&
                  nbr.size(1) == nbr_width(num_neighbors),
              op, ": 'nbr' must have shape [", target.numel(), ", ",
              nbr_width(num_neighbors), "], got ", nbr.sizes());
  if (reduce == Reduce::kMax) {
    check_dtype(op, "arg", arg, at::kLong);
    check_same_device(op, "arg", arg, "colptr", colptr);
    TORCH_CHECK(arg.sizes() == grad_out.sizes(), op, ": 'arg' must have shape ",
                grad_out.sizes(), ", got ", arg.sizes());
  }
}

// rng_seed >= 0 is the key; -1 draws one from PyTorch's default CPU
// generator (so torch.manual_seed makes runs repeatable). The CUDA kernels
// draw theirs from the CUDA generator instead (graph-capture safe).
inline uint64_t cpu_rng_key(int64_t rng_seed) {
  if (rng_seed >= 0) return static_cast<uint64_t>(rng_seed);
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
}

inline void check_rng_seed(const char* op, int64_t rng_seed) {
  TORCH_CHECK(rng_seed >= -1, op, ": 'rng_seed' must be >= 0, or -1 for a "
              "key from PyTorch's generator, got ", rng_seed);
}

}  // namespace fusesample
