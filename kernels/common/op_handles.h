// Typed handles of the ops that other ops and the native prefetchers call
// through the dispatcher (so that each device's kernel runs), looked up once.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <tuple>
#include <vector>

namespace fusesample {
namespace ops {

template <class Fn>
c10::TypedOperatorHandle<Fn> find(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Fn>();
}

// fusesample::neighbor_sample (schema in kernels/sampler/neighbor_sample.cpp)
using NeighborSampleFn = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor,
                                    at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
    const at::Tensor&, at::IntArrayRef, bool, bool, int64_t, bool, int64_t,
    at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, const std::optional<at::Tensor>&,
    const std::optional<at::Tensor>&, bool, const std::optional<at::Tensor>&);

inline const c10::TypedOperatorHandle<NeighborSampleFn>& neighbor_sample() {
  static const auto op = find<NeighborSampleFn>("fusesample::neighbor_sample");
  return op;
}

// fusesample::gather_rows_list (kernels/gather/gather_rows.cpp)
using GatherRowsListFn = std::vector<at::Tensor>(at::TensorList, const at::Tensor&, bool);

inline const c10::TypedOperatorHandle<GatherRowsListFn>& gather_rows_list() {
  static const auto op = find<GatherRowsListFn>("fusesample::gather_rows_list");
  return op;
}

// fusesample::gather_rows (kernels/gather/gather_rows.cpp)
using GatherRowsFn = at::Tensor(const at::Tensor&, const at::Tensor&, bool);

inline const c10::TypedOperatorHandle<GatherRowsFn>& gather_rows() {
  static const auto op = find<GatherRowsFn>("fusesample::gather_rows");
  return op;
}

// fusesample::keyed_draws (kernels/sampler/keyed_draws.cpp)
using KeyedDrawsFn = std::tuple<at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, const at::Tensor&,
    const at::Tensor&, int64_t, bool, int64_t, int64_t, const std::optional<at::Tensor>&,
    const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, bool,
    const std::optional<at::Tensor>&);

inline const c10::TypedOperatorHandle<KeyedDrawsFn>& keyed_draws() {
  static const auto op = find<KeyedDrawsFn>("fusesample::keyed_draws");
  return op;
}

// A distributed hop's bookkeeping (kernels/sampler/dist_hop.cpp)
using DistRequestsFn = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, int64_t, int64_t, int64_t, const at::Tensor&, int64_t,
    const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
    const std::optional<at::Tensor>&);
using DistReplySizesFn = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                    const at::Tensor&, const at::Tensor&);
using DistFrontierOrderFn = std::tuple<at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t, int64_t);
using DistRelabelFn = std::tuple<at::Tensor, at::Tensor, int64_t>(const at::Tensor&,
                                                                  const at::Tensor&);
using DistPadRepliesFn = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                    int64_t);
using DistUnpadRepliesFn = std::tuple<at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, int64_t, int64_t, int64_t);

inline const c10::TypedOperatorHandle<DistRequestsFn>& dist_requests() {
  static const auto op = find<DistRequestsFn>("fusesample::dist_requests");
  return op;
}

inline const c10::TypedOperatorHandle<DistReplySizesFn>& dist_reply_sizes() {
  static const auto op = find<DistReplySizesFn>("fusesample::dist_reply_sizes");
  return op;
}

inline const c10::TypedOperatorHandle<DistFrontierOrderFn>& dist_frontier_order() {
  static const auto op = find<DistFrontierOrderFn>("fusesample::dist_frontier_order");
  return op;
}

inline const c10::TypedOperatorHandle<DistRelabelFn>& dist_relabel() {
  static const auto op = find<DistRelabelFn>("fusesample::dist_relabel");
  return op;
}

inline const c10::TypedOperatorHandle<DistPadRepliesFn>& dist_pad_replies() {
  static const auto op = find<DistPadRepliesFn>("fusesample::dist_pad_replies");
  return op;
}

inline const c10::TypedOperatorHandle<DistUnpadRepliesFn>& dist_unpad_replies() {
  static const auto op = find<DistUnpadRepliesFn>("fusesample::dist_unpad_replies");
  return op;
}

// src.index_select(0, index) for an int64 index the caller knows lies in
// range (an op's own intermediate ids). On a GPU it goes through
// gather_rows' kernel, a thread per element: ATen's index_select hands more
// than 16 ids to gather_out, whose blocks take 1,024 ids each, so a ShaDow
// batch's 61K-id gathers ran on 60 blocks of an H100's 132 SMs for 17-37 us
// each (29 of them a batch, the producer's largest kernel time).
inline at::Tensor take(const at::Tensor& src, const at::Tensor& index) {
  if (src.is_cuda() && index.is_cuda() && index.scalar_type() == at::kLong)
    return gather_rows().call(src, index, /*check_index=*/false);
  return src.index_select(0, index);
}

}  // namespace ops
}  // namespace fusesample
