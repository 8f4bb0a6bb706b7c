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
// CPU int64), the host reads of exchange sizes (one) and the op's host
// seconds [in its reads (the check's included), in its all-to-all calls, 0,
// in all] (dist_common.h: Exchanges::host_seconds).
// Exchanges: the ids' sizes (one host read), the ids, one of rows per
// table; this rank's own ids stay out of them (their rows are read here and
// written in place: at world size 1, one gather where the all-to-all's copy
// to itself and a scatter were two more passes over the rows). A request for
// a node not owned here, by a peer or by this rank's own map, raises "rank r
// was asked for nodes it does not own" (a host read of its own, not counted).
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
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

// t without its rows [start, start + n) (a copy where that leaves both ends)
at::Tensor without(const at::Tensor& t, int64_t start, int64_t n) {
  if (n == 0) return t;
  const int64_t end = start + n;
  if (start == 0) return t.narrow(0, end, t.size(0) - end);
  if (end == t.size(0)) return t.narrow(0, 0, start);
  return at::cat({t.narrow(0, 0, start), t.narrow(0, end, t.size(0) - end)});
}

// rows of a table at local rows (a pinned host table behind a GPU is read
// in place; local is in range)
at::Tensor rows_of(const at::Tensor& table, const at::Tensor& local) {
  return table.device() == local.device() ? table.index_select(0, local)
                                          : ops::gather_rows().call(table, local, false);
}

std::tuple<std::vector<at::Tensor>, int64_t, at::Tensor, int64_t, std::vector<double>>
dist_fetch_rows(
    const std::string& group, const at::Tensor& ids, const at::Tensor& owner_map,
    const at::Tensor& nodes, at::TensorList tables, int64_t row_offset) {
  const char* op = "fusesample::dist_fetch_rows";
  check_node_ids(op, "ids", ids, ids, "ids");
  check_node_ids(op, "owner_map", owner_map, ids, "ids");
  check_node_ids(op, "nodes", nodes, ids, "ids");
  Exchanges ex(group);
  const int64_t me = ex.rank();
  at::Tensor perm, counts, unused;
  std::tie(perm, counts, unused) = dist::by_owner(owner_map, ids, ex.world());
  Splits sent, asked_counts;
  std::tie(sent, asked_counts, unused) = ex.sizes(counts);
  // this rank's own ids: a block of perm (ids grouped by owner), left out
  // of the exchanges
  const int64_t own_start = std::accumulate(sent.begin(), sent.begin() + me, int64_t{0});
  const int64_t own = sent[me];
  sent[me] = asked_counts[me] = 0;
  const at::Tensor grouped = ids.index_select(0, perm);
  const at::Tensor asked = ex.send(without(grouped, own_start, own), sent, asked_counts);
  // the rows of what peers ask and of own ids (a node not owned here:
  // refused, one host read where there are any)
  at::Tensor local, foreign, own_local, own_foreign;
  std::tie(local, foreign) = dist::local_rows(nodes, asked);
  std::tie(own_local, own_foreign) = dist::local_rows(nodes, grouped.narrow(0, own_start, own));
  if (asked.numel() + own > 0) {
    dist::refuse_foreign(ex.to_host(foreign.logical_or(own_foreign)).item<bool>(), me);
  }
  local = local - row_offset;
  own_local = own_local - row_offset;
  const bool all_own = own == ids.numel();  // (then perm is the identity)
  const at::Tensor perm_own = perm.narrow(0, own_start, own);
  const at::Tensor perm_peers = without(perm, own_start, own);
  std::vector<at::Tensor> out;
  for (const at::Tensor& table : tables) {
    const at::Tensor got = ex.send(rows_of(table, local), asked_counts, sent);
    if (all_own) {
      out.push_back(rows_of(table, own_local));
      continue;
    }
    std::vector<int64_t> shape = table.sizes().vec();
    shape[0] = ids.numel();
    at::Tensor rows = at::empty(shape, got.options());
    rows.index_copy_(0, perm_peers, got);
    if (own > 0) rows.index_copy_(0, perm_own, rows_of(table, own_local));
    out.push_back(rows);
  }
  const int64_t remote = dist::total(sent);
  return {out, remote, ex.log(), ex.host_reads(), ex.host_seconds()};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "dist_fetch_rows(str group, Tensor ids, Tensor owner_map, Tensor nodes, "
      "Tensor[] tables, int row_offset) -> (Tensor[] rows, int remote_rows, "
      "Tensor exchanges, int host_reads, float[] host_seconds)");
}

TORCH_LIBRARY_IMPL(fusesample, CompositeExplicitAutograd, m) {
  m.impl("dist_fetch_rows", &dist_fetch_rows);
}

}  // namespace fusesample
