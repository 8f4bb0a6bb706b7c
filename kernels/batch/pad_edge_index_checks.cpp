// pad_edge_index's argument checks (contract: pad_edge_index.cpp): shapes,
// dtypes and the counts' consistency, all on the host (they are host lists).
#include <ATen/core/Tensor.h>

#include <algorithm>

#include "pad_edge_index_common.h"

namespace fusesample {
namespace {

// Cumulative counts: start at 0, never decrease; the padded ones hold the
// real ones per hop (plus a pad row per node hop when `pad_row`).
void check_cumulative(const char* op, const char* name, at::IntArrayRef real,
                      const char* padded_name, at::IntArrayRef padded, bool pad_row) {
  TORCH_CHECK(real.size() == padded.size(), op, ": '", name, "' and '", padded_name,
              "' differ in length (", real.size(), " vs ", padded.size(), ")");
  TORCH_CHECK(!real.empty() && real[0] == 0 && padded[0] == 0, op, ": '", name, "' and '",
              padded_name, "' must start at 0 (cumulative counts)");
  for (size_t h = 1; h < real.size(); ++h) {
    const int64_t n = real[h] - real[h - 1], cap = padded[h] - padded[h - 1];
    TORCH_CHECK(n >= 0, op, ": '", name, "' decreases at entry ", h);
    TORCH_CHECK(cap >= n + (pad_row ? 1 : 0), op, ": '", padded_name, "' gives hop ", h - 1,
                " ", cap, " slots for its ", n, pad_row ? " rows and a pad row" : " edges");
  }
}

}  // namespace

PadHops check_pad_edge_index(const char* op, const at::Tensor& edge_index,
                             at::IntArrayRef edges, at::IntArrayRef padded_edges,
                             at::IntArrayRef src_nodes, at::IntArrayRef padded_src_nodes,
                             at::IntArrayRef dst_nodes, at::IntArrayRef padded_dst_nodes,
                             const at::Tensor& out) {
  TORCH_CHECK(edge_index.dim() == 2 && edge_index.size(0) == 2, op,
              ": 'edge_index' must be [2, E], got ", edge_index.sizes());
  check_index_dtype(op, "edge_index", edge_index);
  const int64_t L = static_cast<int64_t>(edges.size()) - 1;
  TORCH_CHECK(L >= 1 && L <= kMaxPadHops, op, ": 'edges' must hold 2 to ", kMaxPadHops + 1,
              " cumulative counts, got ", edges.size());
  check_cumulative(op, "edges", edges, "padded_edges", padded_edges, false);
  check_cumulative(op, "src_nodes", src_nodes, "padded_src_nodes", padded_src_nodes, true);
  check_cumulative(op, "dst_nodes", dst_nodes, "padded_dst_nodes", padded_dst_nodes, true);
  TORCH_CHECK(edges[L] == edge_index.size(1), op, ": 'edges' ends at ", edges[L],
              " but 'edge_index' has ", edge_index.size(1), " edges");
  TORCH_CHECK(static_cast<int64_t>(src_nodes.size()) == L + 2, op, ": 'src_nodes' must hold ",
              L + 2, " cumulative counts (hops 0..", L, "), got ", src_nodes.size());
  TORCH_CHECK(static_cast<int64_t>(dst_nodes.size()) >= L + 1 &&
                  static_cast<int64_t>(dst_nodes.size()) <= kMaxPadHops + 2,
              op, ": 'dst_nodes' must hold ", L + 1, " or more cumulative counts, got ",
              dst_nodes.size());
  TORCH_CHECK(out.scalar_type() == edge_index.scalar_type() && out.device() == edge_index.device(),
              op, ": 'out' must have edge_index's dtype and device");
  TORCH_CHECK(out.dim() == 2 && out.size(0) == 2 && out.size(1) == padded_edges[L] &&
                  out.is_contiguous(),
              op, ": 'out' must be a contiguous [2, ", padded_edges[L], "], got ", out.sizes());
  PadHops k{};
  k.hops = static_cast<int>(L);
  std::copy(edges.begin(), edges.end(), k.edges);
  std::copy(padded_edges.begin(), padded_edges.end(), k.padded_edges);
  std::copy(src_nodes.begin(), src_nodes.end(), k.src);
  std::copy(padded_src_nodes.begin(), padded_src_nodes.end(), k.padded_src);
  std::copy(dst_nodes.begin(), dst_nodes.end(), k.dst);
  std::copy(padded_dst_nodes.begin(), padded_dst_nodes.end(), k.padded_dst);
  return k;
}

}  // namespace fusesample
