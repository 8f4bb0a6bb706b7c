// CPU kernels of fusesample::sample_aggregate and its backward (contract:
// ../sample_aggregate.cpp). Also the reference the CUDA kernels are tested
// against.
//
// Forward: targets in parallel (at::parallel_for); each draws its neighbours
// (floyd.h, the same keys as the CUDA kernel) and reduces their rows in an
// accumulator of opmath type (float for half/bfloat16).
// Backward: feature columns in parallel, targets in order within a column
// range, so every gradient element is summed in one fixed order by one
// thread -- deterministic, and no two threads write one cache line's worth of
// a row at once (ranges are at least 16 columns).
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <atomic>
#include <vector>

#include "../../common/floyd.h"
#include "../../common/rng.h"
#include "../../sampler/sample_count.h"
#include "../sample_aggregate_common.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::sample_aggregate";
constexpr const char* kOpBackward = "fusesample::sample_aggregate_backward";

template <typename scalar_t, typename index_t>
void forward(const at::Tensor& colptr, const at::Tensor& row,
             const at::Tensor& x, const at::Tensor& target, int64_t k,
             Reduce reduce, bool replace, uint64_t rng_seed, int64_t level,
             at::Tensor& out, at::Tensor& nbr, at::Tensor& arg) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t* colptr_p = colptr.data_ptr<int64_t>();
  const index_t* row_p = row.data_ptr<index_t>();
  const scalar_t* x_p = x.data_ptr<scalar_t>();
  const int64_t* target_p = target.data_ptr<int64_t>();
  scalar_t* out_p = out.data_ptr<scalar_t>();
  int64_t* nbr_p = nbr.data_ptr<int64_t>();
  int64_t* arg_p = reduce == Reduce::kMax ? arg.data_ptr<int64_t>() : nullptr;
  const int64_t T = target.numel(), F = x.size(1), num_src = x.size(0);
  const int64_t K = nbr_width(k);
  std::atomic<int64_t> bad_source{-1};

  at::parallel_for(0, T, 64, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> picks;
    std::vector<uint8_t> seen;
    std::vector<acc_t> acc(F);
    std::vector<int64_t> best(reduce == Reduce::kMax ? F : 0);
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t v = target_p[t];
      int64_t* slots = nbr_p + t * K;
      std::fill(slots, slots + K, -1);
      std::fill(acc.begin(), acc.end(), acc_t(0));
      std::fill(best.begin(), best.end(), int64_t(-1));
      int64_t count = 0;
      // Folds source u into the accumulator (max keeps the first maximum).
      auto take = [&](int64_t u) {
        if (u < 0 || u >= num_src) {
          bad_source.store(u);
          return;
        }
        const scalar_t* xu = x_p + u * F;
        if (reduce == Reduce::kMax) {
          for (int64_t f = 0; f < F; ++f) {
            const acc_t val = static_cast<acc_t>(xu[f]);
            if (best[f] < 0 || val > acc[f]) {
              acc[f] = val;
              best[f] = u;
            }
          }
        } else {
          for (int64_t f = 0; f < F; ++f) acc[f] += static_cast<acc_t>(xu[f]);
        }
        ++count;
      };
      if (v >= 0) {
        const int64_t start = colptr_p[v];
        const int64_t d = colptr_p[v + 1] - start;
        auto emit = [&](int64_t s, int64_t j) {
          const int64_t u = static_cast<int64_t>(row_p[start + j]);
          if (K > 0) slots[s] = u;
          take(u);
        };
        sample_positions(rng_seed, level, v, d, k, replace, picks, seen, emit);
      }
      scalar_t* o = out_p + t * F;
      const acc_t scale = reduce == Reduce::kMean && count > 0
                              ? acc_t(1) / static_cast<acc_t>(count)
                              : acc_t(1);
      for (int64_t f = 0; f < F; ++f)
        o[f] = static_cast<scalar_t>(count > 0 ? acc[f] * scale : acc_t(0));
      if (arg_p) std::copy(best.begin(), best.end(), arg_p + t * F);
    }
  });
  const int64_t bad = bad_source.load();
  TORCH_CHECK(bad < 0, kOp, ": the graph has source id ", bad,
              " but 'x' has only ", num_src, " rows");
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> sample_aggregate_cpu(
    const at::Tensor& colptr, const at::Tensor& row, const at::Tensor& x,
    const at::Tensor& target, int64_t num_neighbors, c10::string_view reduce_name,
    bool replace, int64_t rng_seed, int64_t level) {
  check_sample_aggregate(kOp, colptr, row, x, target, num_neighbors);
  const Reduce reduce = parse_reduce(kOp, std::string(reduce_name));
  check_rng_seed(kOp, rng_seed);
  // -1 pads tree levels; anything else must be a node of the graph.
  check_ids_in_range_cpu(kOp, "target", target, colptr.numel() - 1, /*lowest=*/-1);
  const auto colptr_c = colptr.contiguous(), row_c = row.contiguous(),
             x_c = x.contiguous(), target_c = target.contiguous();
  const int64_t T = target.numel(), F = x.size(1);
  auto out = at::empty({T, F}, x.options());
  auto nbr = at::empty({T, nbr_width(num_neighbors)}, target.options());
  auto arg = reduce == Reduce::kMax ? at::empty({T, F}, target.options())
                                    : at::empty({0}, target.options());
  // k = -1 draws nothing, so it leaves the generator alone.
  const uint64_t key = num_neighbors >= 0 ? cpu_rng_key(rng_seed) : 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(),
                                  "sample_aggregate_cpu", [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(row.scalar_type(), "sample_aggregate_cpu", [&] {
      forward<scalar_t_, index_t>(colptr_c, row_c, x_c, target_c, num_neighbors,
                                  reduce, replace, key,
                                  level, out, nbr, arg);
    });
  });
  return std::make_tuple(out, nbr, arg);
}

template <typename scalar_t, typename index_t>
at::Tensor backward(const at::Tensor& grad_out, const at::Tensor& colptr,
                    const at::Tensor& row, const at::Tensor& target,
                    const at::Tensor& nbr, const at::Tensor& arg, int64_t k,
                    Reduce reduce, int64_t num_src) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t T = target.numel(), F = grad_out.size(1), K = nbr.size(1);
  const auto acc_type = c10::CppTypeToScalarType<acc_t>::value;
  at::Tensor grad = at::zeros({num_src, F}, grad_out.options().dtype(acc_type));
  acc_t* g_p = grad.data_ptr<acc_t>();
  const scalar_t* go_p = grad_out.data_ptr<scalar_t>();
  const int64_t* colptr_p = colptr.data_ptr<int64_t>();
  const index_t* row_p = row.data_ptr<index_t>();
  const int64_t* target_p = target.data_ptr<int64_t>();
  const int64_t* nbr_p = nbr.data_ptr<int64_t>();
  const int64_t* arg_p = reduce == Reduce::kMax ? arg.data_ptr<int64_t>() : nullptr;
  std::atomic<int64_t> bad_source{-1};

  at::parallel_for(0, F, 16, [&](int64_t f0, int64_t f1) {
    for (int64_t t = 0; t < T; ++t) {
      const scalar_t* go = go_p + t * F;
      if (arg_p) {
        const int64_t* a = arg_p + t * F;
        for (int64_t f = f0; f < f1; ++f) {
          if (a[f] < 0) continue;
          if (a[f] >= num_src) {
            bad_source.store(a[f]);
            continue;
          }
          g_p[a[f] * F + f] += static_cast<acc_t>(go[f]);
        }
        continue;
      }
      // The sampled sources of t: its nbr row, or all in-edges for k = -1.
      const int64_t v = target_p[t];
      const int64_t* slots = nbr_p + t * K;
      int64_t count = 0, start = 0;
      if (k >= 0) {
        for (int64_t s = 0; s < K; ++s) count += slots[s] >= 0;
      } else if (v >= 0) {
        start = colptr_p[v];
        count = colptr_p[v + 1] - start;
      }
      if (count == 0) continue;
      const acc_t w = reduce == Reduce::kMean ? acc_t(1) / static_cast<acc_t>(count)
                                              : acc_t(1);
      const int64_t n = k >= 0 ? K : count;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t u = k >= 0 ? slots[s] : static_cast<int64_t>(row_p[start + s]);
        if (u < 0) continue;
        if (u >= num_src) {
          bad_source.store(u);
          continue;
        }
        acc_t* gu = g_p + u * F;
        for (int64_t f = f0; f < f1; ++f) gu[f] += static_cast<acc_t>(go[f]) * w;
      }
    }
  });
  const int64_t bad = bad_source.load();
  TORCH_CHECK(bad < 0, kOpBackward, ": source id ", bad, " is outside [0, ",
              num_src, ")");
  return grad.scalar_type() == grad_out.scalar_type()
             ? grad
             : grad.to(grad_out.scalar_type());
}

at::Tensor sample_aggregate_backward_cpu(
    const at::Tensor& grad_out, const at::Tensor& colptr, const at::Tensor& row,
    const at::Tensor& target, const at::Tensor& nbr, const at::Tensor& arg,
    int64_t num_neighbors, c10::string_view reduce_name, int64_t num_src) {
  const Reduce reduce = parse_reduce(kOpBackward, std::string(reduce_name));
  check_sample_aggregate_backward(kOpBackward, grad_out, colptr, row, target,
                                  nbr, arg, num_neighbors, reduce, num_src);
  const auto go = grad_out.contiguous(), colptr_c = colptr.contiguous(),
             row_c = row.contiguous(), target_c = target.contiguous(),
             nbr_c = nbr.contiguous(), arg_c = arg.contiguous();
  at::Tensor grad;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(),
                                  "sample_aggregate_backward_cpu", [&] {
    using scalar_t_ = scalar_t;
    AT_DISPATCH_INDEX_TYPES(row.scalar_type(), "sample_aggregate_backward_cpu", [&] {
      grad = backward<scalar_t_, index_t>(go, colptr_c, row_c, target_c, nbr_c,
                                          arg_c, num_neighbors, reduce, num_src);
    });
  });
  return grad;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("sample_aggregate", &sample_aggregate_cpu);
  m.impl("sample_aggregate_backward", &sample_aggregate_backward_cpu);
  // (the CPU kernels raise instead: always a zero word)
  m.impl("sample_aggregate_error", [](const at::Tensor& like) {
    return at::zeros({2}, like.options().dtype(at::kLong));
  });
}

}  // namespace fusesample
