// CPU kernels of fusesample::layer_sample: the draws of layer_draws.h in
// parallel loops, around the ATen body (layer_sample_driver.h).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <tuple>
#include <utility>

#include "../../search/cpu/search_runs.h"
#include "../layer_draws.h"
#include "../layer_sample_driver.h"

namespace fusesample {
namespace layer {
namespace {

struct CpuKernels {
  // Each segment fills its own positions: one pass over the output (a
  // binary search per position was 2-10x slower at a layer's 26K-180K
  // positions, one thread).
  static at::Tensor segment_of(const at::Tensor& ends, int64_t m) {
    const auto e = ends.contiguous();
    auto out = at::empty({m}, e.options());
    const int64_t* end = e.data_ptr<int64_t>();
    int64_t* o = out.data_ptr<int64_t>();
    at::parallel_for(0, e.numel(), 1024, [&](int64_t lo, int64_t hi) {
      for (int64_t j = lo; j < hi; ++j)
        for (int64_t i = j > 0 ? end[j - 1] : 0; i < end[j]; ++i) o[i] = j;
    });
    return out;
  }

  static at::Tensor in_edge_slots(const at::Tensor& colptr,
                                  const at::Tensor& node,
                                  const at::Tensor& ends,
                                  const at::Tensor& tgt) {
    const int64_t m = tgt.numel();
    auto out = at::empty({m}, tgt.options());
    const int64_t* p = colptr.data_ptr<int64_t>();
    const int64_t* v = node.data_ptr<int64_t>();
    const int64_t* end = ends.data_ptr<int64_t>();
    const int64_t* t = tgt.data_ptr<int64_t>();
    int64_t* o = out.data_ptr<int64_t>();
    at::parallel_for(0, m, 4096, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        o[i] = in_edge_slot(p, v, end, t[i], i);
    });
    return out;
  }

  static std::tuple<at::Tensor, at::Tensor> ladies_keys(
      const at::Tensor& seg_ptr, const at::Tensor& val2, const at::Tensor& cand,
      int64_t rng_seed, int64_t l) {
    const int64_t n = cand.numel();
    auto q = at::empty({n}, val2.options());
    auto key = at::empty({n}, val2.options());
    const int64_t* ptr = seg_ptr.data_ptr<int64_t>();
    const double* v = val2.data_ptr<double>();
    const int64_t* c = cand.data_ptr<int64_t>();
    double* q_out = q.data_ptr<double>();
    double* key_out = key.data_ptr<double>();
    at::parallel_for(0, n, 1024, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        ladies_key(v, ptr[i], ptr[i + 1], static_cast<uint64_t>(rng_seed), l,
                   c[i], q_out + i, key_out + i);
    });
    return {q, key};
  }

  // searchsorted(sorted, query) (left): a layer's sources looked up among
  // its few thousand sorted pool nodes, one run for segment_search's CPU
  // loop (ATen's CPU searchsorted was slower at these sizes).
  static at::Tensor sorted_position(const at::Tensor& sorted,
                                    const at::Tensor& query) {
    const auto s = sorted.contiguous();
    const auto q = query.contiguous();
    auto out = at::empty_like(q);
    const int64_t size = s.numel();
    search_runs(s.data_ptr<int64_t>(), q.data_ptr<int64_t>(), q.numel(),
                /*upper=*/false,
                [size](int64_t) { return std::make_pair(int64_t{0}, size); },
                out.data_ptr<int64_t>());
    return out;
  }

  static at::Tensor fastgcn_draws(const at::Tensor& node_cumsum, int64_t s,
                                  int64_t rng_seed, int64_t l) {
    auto out = at::empty({s}, node_cumsum.options().dtype(at::kLong));
    const int64_t n = node_cumsum.numel();
    const double* cum = node_cumsum.data_ptr<double>();
    int64_t* o = out.data_ptr<int64_t>();
    at::parallel_for(0, s, 1024, [&](int64_t lo, int64_t hi) {
      for (int64_t j = lo; j < hi; ++j)
        o[j] = fastgcn_draw(cum, n, static_cast<uint64_t>(rng_seed), l, j);
    });
    return out;
  }
};

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("layer_sample", &layer_sample_driver<CpuKernels>);
}

}  // namespace layer
}  // namespace fusesample
