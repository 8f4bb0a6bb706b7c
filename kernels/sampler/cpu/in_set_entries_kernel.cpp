// CPU kernel of fusesample::in_set_entries (contract: ../in_set_entries.cpp):
// per position, its list's entries looked up in its set's run of the key
// (std::lower_bound); counted in a parallel loop, then written at each
// position's offset in a second one, so the order is (position, slot).
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>

#include "../in_set_entries_checks.h"

namespace fusesample {
namespace {

using Entries = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

template <typename nbr_t>
struct Lists {
  const int64_t *ptr, *node, *group, *key, *set_ptr;
  const nbr_t* nbr;
  const bool* skip;
  int64_t num_nodes;

  // Calls hit(slot, key position) for every entry of position i's list in
  // its set, in slot order.
  template <class Hit>
  void visit(int64_t i, const Hit& hit) const {
    if (skip[i]) return;
    const int64_t g = group[i];
    const int64_t* lo = key + set_ptr[g];
    const int64_t* hi = key + set_ptr[g + 1];
    const int64_t base = g * num_nodes;
    for (int64_t s = ptr[node[i]]; s < ptr[node[i] + 1]; ++s) {
      const int64_t q = base + static_cast<int64_t>(nbr[s]);
      const int64_t* f = std::lower_bound(lo, hi, q);
      if (f != hi && *f == q) hit(s, f - key);
    }
  }
};

Entries in_set_entries_cpu(const at::Tensor& ptr, const at::Tensor& nbr,
                           const at::Tensor& node, const at::Tensor& group,
                           const at::Tensor& key, const at::Tensor& set_ptr,
                           const at::Tensor& skip, int64_t num_nodes) {
  check_in_set_entries(ptr, nbr, node, group, key, set_ptr, skip, num_nodes);
  const auto ptr_c = ptr.contiguous(), nbr_c = nbr.contiguous(),
             node_c = node.contiguous(), group_c = group.contiguous(),
             key_c = key.contiguous(), set_c = set_ptr.contiguous(),
             skip_c = skip.contiguous();
  const int64_t n = node.numel(), N = ptr.numel() - 1, G = set_ptr.numel() - 1;
  const int64_t* v = node_c.data_ptr<int64_t>();
  const int64_t* g = group_c.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    TORCH_CHECK(v[i] >= 0 && v[i] < N && g[i] >= 0 && g[i] < G, kInSetEntriesOp,
                ": position ", i, " holds node ", v[i], " of set ", g[i],
                ", outside [0, ", N, ") x [0, ", G, ")");
  const int64_t* set_begin = set_c.data_ptr<int64_t>();
  const int64_t K = key.numel();
  for (int64_t k = 0; k < G; ++k)
    TORCH_CHECK(set_begin[k] >= 0 && set_begin[k] <= set_begin[k + 1] && set_begin[k + 1] <= K,
                kInSetEntriesOp, ": 'set_ptr' must rise from 0 to at most ", K,
                " (the keys), got [", set_begin[k], ", ", set_begin[k + 1], ") for set ", k);
  const int64_t lists_end = ptr_c.data_ptr<int64_t>()[N];
  TORCH_CHECK(lists_end <= nbr.numel(), kInSetEntriesOp, ": 'ptr' ends at ", lists_end,
              " past 'nbr' (", nbr.numel(), " entries)");
  auto count = at::zeros({n + 1}, node.options());
  Entries out;
  AT_DISPATCH_INDEX_TYPES(nbr.scalar_type(), "in_set_entries_cpu", [&] {
    const Lists<index_t> lists{ptr_c.data_ptr<int64_t>(), v, g, key_c.data_ptr<int64_t>(),
                               set_begin, nbr_c.data_ptr<index_t>(),
                               skip_c.data_ptr<bool>(), num_nodes};
    int64_t* c = count.data_ptr<int64_t>();
    at::parallel_for(0, n, 1024, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) lists.visit(i, [&](int64_t, int64_t) { ++c[i + 1]; });
    });
    const auto offset = count.cumsum(0);
    const int64_t* o = offset.data_ptr<int64_t>();
    const int64_t m = o[n];
    auto nbr_pos = at::empty({m}, node.options());
    auto pos = at::empty({m}, node.options());
    auto slot = at::empty({m}, node.options());
    int64_t *np = nbr_pos.data_ptr<int64_t>(), *pp = pos.data_ptr<int64_t>(),
            *sp = slot.data_ptr<int64_t>();
    at::parallel_for(0, n, 1024, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        int64_t w = o[i];
        lists.visit(i, [&](int64_t s, int64_t f) {
          np[w] = f;
          pp[w] = i;
          sp[w] = s;
          ++w;
        });
      }
    });
    out = {nbr_pos, pos, slot};
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("in_set_entries", &in_set_entries_cpu);
}

}  // namespace fusesample
