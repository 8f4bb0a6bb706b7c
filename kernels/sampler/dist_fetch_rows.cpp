// fusesample::dist_fetch_rows -- rows of node features from the ranks that
// own them (pyg_fusesample.distributed.dist_sampler: a batch's feature
// gather, and the cache of hot remote rows), the exchanges included, in one
// call without the GIL (as dist_sample_hops.cpp).
//
// Contract (int64 index tensors on one device, the process group's):
//   group: a torch.distributed process group's name; every rank calls the
//     op (collective), with ids of any length.
//   ids [m]: global node ids; owner_map [num_nodes]: each node's rank;
//   nodes [n]: the ids owned here, ascending; tables: node feature tables
//     of this rank's part, owned node j at row j - row_offset (on the
//     device, or in pinned host memory behind a GPU: read in place).
// Returns each table's rows of ids (in ids' order), the rows asked of other
// ranks, the exchanges made (bytes a row, rows to each rank, rows from each;
// CPU int64) and the host reads of exchange sizes (one).
// Exchanges: the ids' sizes (one host read), the ids, one of rows per
// table. A request for a node not owned here raises "rank r was asked for
// nodes it does not own" (a host read of its own, not counted).
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "../common/checks.h"
#include "../common/op_handles.h"
#include "dist_common.h"

namespace fusesample {
namespace {

using dist::Exchanges;
using dist::Splits;

std::tuple<std::vector<at::Tensor>, int64_t, at::Tensor, int64_t> dist_fetch_rows(
    const std::string& group, const at::Tensor& ids, const at::Tensor& owner_map,
    const at::Tensor& nodes, at::TensorList tables, int64_t row_offset) {
  const char* op = "fusesample::dist_fetch_rows";
  check_node_ids(op, "ids", ids, ids, "ids");
  check_node_ids(op, "owner_map", owner_map, ids, "ids");
  check_node_ids(op, "nodes", nodes, ids, "ids");
  Exchanges ex(group);
  at::Tensor perm, counts, unused;
  std::tie(perm, counts, unused) = dist::by_owner(owner_map, ids, ex.world());
  Splits sent, asked_counts;
  std::tie(sent, asked_counts, unused) = ex.sizes(counts);
  const at::Tensor asked = ex.send(ids.index_select(0, perm), sent, asked_counts);
  // their rows here (a request for a node not owned here: refused; a host
  // read of its own where there are requests)
  at::Tensor local, foreign;
  std::tie(local, foreign) = dist::local_rows(nodes, asked);
  if (asked.numel() > 0) dist::refuse_foreign(foreign.item<bool>(), ex.rank());
  local = local - row_offset;
  std::vector<at::Tensor> out;
  for (const at::Tensor& table : tables) {
    // (a pinned host table behind a GPU is read in place; local in range)
    const at::Tensor rows = table.device() == local.device()
                                ? table.index_select(0, local)
                                : ops::gather_rows().call(table, local, false);
    const at::Tensor got = ex.send(rows, asked_counts, sent);
    out.push_back(at::empty_like(got).index_copy_(0, perm, got));
  }
  const int64_t remote = dist::total(sent) - sent[ex.rank()];
  return {out, remote, ex.log(), ex.host_reads()};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "dist_fetch_rows(str group, Tensor ids, Tensor owner_map, Tensor nodes, "
      "Tensor[] tables, int row_offset) -> (Tensor[] rows, int remote_rows, "
      "Tensor exchanges, int host_reads)");
}

TORCH_LIBRARY_IMPL(fusesample, CompositeExplicitAutograd, m) {
  m.impl("dist_fetch_rows", &dist_fetch_rows);
}

}  // namespace fusesample
