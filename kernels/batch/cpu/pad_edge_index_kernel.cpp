// CPU kernel of fusesample::pad_edge_index (contract: ../pad_edge_index.cpp);
// the reference the CUDA kernel is tested against. A bad id raises.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../pad_edge_index_common.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::pad_edge_index";

void pad_edge_index_cpu(const at::Tensor& edge_index, at::IntArrayRef edges,
                        at::IntArrayRef padded_edges, at::IntArrayRef src_nodes,
                        at::IntArrayRef padded_src_nodes, at::IntArrayRef dst_nodes,
                        at::IntArrayRef padded_dst_nodes, const at::Tensor& out) {
  const PadHops k = check_pad_edge_index(kOp, edge_index, edges, padded_edges, src_nodes,
                                         padded_src_nodes, dst_nodes, padded_dst_nodes, out);
  const auto ei = edge_index.contiguous();
  const int64_t E = ei.size(1), D = out.size(1);
  AT_DISPATCH_INDEX_TYPES(ei.scalar_type(), kOp, [&] {
    const index_t* in = ei.data_ptr<index_t>();
    index_t* o = out.data_ptr<index_t>();
    at::parallel_for(0, D, 4096, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const PadSlot s = pad_slot(k, p, in, E);
        TORCH_CHECK(!s.bad, kOp, ": 'edge_index' holds id ", s.bad_id,
                    " outside the hops its edge may read or write (not a fused loader's "
                    "batch with these counts)");
        o[p] = static_cast<index_t>(s.src);
        o[D + p] = static_cast<index_t>(s.dst);
      }
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("pad_edge_index", &pad_edge_index_cpu);
}

}  // namespace fusesample
