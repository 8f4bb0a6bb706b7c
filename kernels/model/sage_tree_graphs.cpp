// CUDA graphs for fusesample::sage_tree.
//
// Why: a FusedGraphSAGE step is ~50 small kernels whose launch cost from
// C++ (ATen dispatch, allocation, cudaLaunchKernel) is several times their
// GPU time. All of their shapes follow from the op's arguments (the tree is
// padded: B * k_0 * ... slots per level), so one recording serves every
// batch of the same size.
//
// How: the first call with a signature (devices, shapes, dtypes and
// addresses of x, the graph and the parameters; the options) runs eagerly;
// the second warms up (one throwaway forward + backward on a side stream:
// cuBLAS handles and lazily made state exist before the capture) and records
// the forward; later calls copy the seeds into the recording's input and replay.
// Each capture makes its own cuBLAS workspace in the recording's memory pool
// (../common/capture_workspace.h says why: one made by the warm-up is freed
// by whoever clears ATen's workspace map, e.g. torch.compile's CUDA graphs).
// The first backward of a replayed forward records the backward in the same
// memory pool. Outputs and gradients are handed out as fresh tensors, so
// nothing a user keeps is overwritten by a later replay. The RNG key is read
// from the CUDA generator inside the kernels (rng_seed = -1), so each replay
// draws new neighbours and dropout masks.
//
// A recording's buffers hold one forward's saved state at a time (the lease):
// a second forward with the same signature before the first one's backward
// (or before its graph is freed) runs eagerly (Replay::kBusy: the Python
// wrapper warns). Calls that cannot be replayed run eagerly too: CPU
// tensors, an explicit rng_seed (a host-drawn key) and x requiring grad (its
// backward syncs for k = -1) -- the wrapper warns about these two slow paths
// -- inplace_backward=False, replay=False, and any call made while the stream
// is being captured (e.g. inside CapturedStep, which records the op itself).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros_like.h>
#include "sage_tree_graphs.h"

#ifdef WITH_CUDA

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <atomic>
#include <cstring>
#include <list>
#include <mutex>

#include "../common/capture_workspace.h"

namespace fusesample {
namespace sage_tree {

class StepGraphs {
 public:
  explicit StepGraphs(std::vector<int64_t> key) : key(std::move(key)) {}

  std::vector<int64_t> key;
  int64_t seen = 0;
  // A live forward owns the buffers. Set by the forward, cleared by its
  // backward on the autograd engine's thread (or when the graph is freed).
  std::atomic<bool> busy{false};
  std::unique_ptr<at::cuda::CUDAGraph> forward, backward;
  c10::optional<c10::cuda::CUDAStream> side;
  at::Tensor seeds, out;            // the forward's static input and output
  State state;                      // the forward's static saved tensors
  std::vector<bool> need;           // what the backward recording computes
  at::Tensor grad_in;               // the backward's static input
  std::vector<at::Tensor> grads;    // its static outputs (views of `flat`)
  at::Tensor flat;
  // The memory of x, the graph and the parameters, weakly: a recording must
  // not keep a deleted model's tensors alive (it is dropped once one of them
  // is gone; the graph itself only holds their addresses, and a call
  // replays only with live tensors at those addresses).
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> inputs;

  bool inputs_alive() const {
    for (const auto& w : inputs) {
      if (w.expired()) return false;
    }
    return true;
  }
};

namespace {

constexpr size_t kMaxRecordings = 4;

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}

std::list<std::shared_ptr<StepGraphs>>& cache() {
  static std::list<std::shared_ptr<StepGraphs>> c;
  return c;
}

void add_tensor(std::vector<int64_t>& key, const at::Tensor& t) {
  key.push_back(reinterpret_cast<int64_t>(t.data_ptr()));
  key.push_back(static_cast<int64_t>(t.scalar_type()));
  key.push_back(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    key.push_back(t.size(d));
    key.push_back(t.stride(d));
  }
}

std::vector<int64_t> signature(const at::Tensor& x, const at::Tensor& colptr,
                               const at::Tensor& row, const at::Tensor& seeds,
                               at::TensorList params, const Options& o,
                               const std::vector<bool>& need) {
  std::vector<int64_t> key{x.device().index(), seeds.numel()};
  add_tensor(key, x);
  add_tensor(key, colptr);
  add_tensor(key, row);
  for (const auto& p : params) add_tensor(key, p);
  key.insert(key.end(), o.fanouts.begin(), o.fanouts.end());
  int64_t dropout_bits;
  std::memcpy(&dropout_bits, &o.dropout, sizeof dropout_bits);
  key.insert(key.end(), {static_cast<int64_t>(o.reduce), o.replace, dropout_bits,
                         static_cast<int64_t>(o.dtype), o.bias});
  for (bool b : need) key.push_back(b);
  return key;
}

// The recording for `key` (most recently used first), made if missing;
// the least recently used idle one goes when there are too many.
std::shared_ptr<StepGraphs> lookup(std::vector<int64_t> key) {
  std::lock_guard<std::mutex> lock(cache_mutex());
  auto& c = cache();
  for (auto it = c.begin(); it != c.end(); ++it) {
    if ((*it)->key == key) {
      c.splice(c.begin(), c, it);
      return c.front();
    }
  }
  // Recordings of tensors that are gone will never replay again.
  c.remove_if([](const auto& g) { return !g->busy && !g->inputs_alive(); });
  c.push_front(std::make_shared<StepGraphs>(std::move(key)));
  if (c.size() > kMaxRecordings) {
    for (auto it = std::prev(c.end()); it != c.begin(); --it) {
      if (!(*it)->busy) {
        c.erase(it);
        break;
      }
    }
  }
  return c.front();
}

// One side stream per device for every recording: cuBLAS keeps a workspace
// per stream (32 MB on Hopper), made by the warm-up and kept for good.
c10::cuda::CUDAStream side_stream(c10::DeviceIndex device) {
  static std::mutex m;
  static std::vector<c10::optional<c10::cuda::CUDAStream>> streams;
  std::lock_guard<std::mutex> lock(m);
  if (streams.size() <= static_cast<size_t>(device)) streams.resize(device + 1);
  if (!streams[device]) {
    streams[device] = at::cuda::getStreamFromPool(/*isHighPriority=*/false, device);
  }
  return *streams[device];
}

// `to` waits for the work queued on `from` so far.
void wait(const c10::cuda::CUDAStream& to, const c10::cuda::CUDAStream& from) {
  at::cuda::CUDAEvent ready;
  ready.record(from);
  ready.block(to);
}

// The saved state's references to the caller's tensors: x, the graph, and
// the first layer's weights where they are the parameters themselves (no
// cast was needed; a cast copy is the recording's own and stays).
void release_inputs(State& s, at::TensorList params) {
  s.x = s.colptr = s.row = at::Tensor();
  for (int i = 0; i < 2; ++i) {
    if (s.weight[i].is_same(params[i])) s.weight[i] = at::Tensor();
  }
}

// What the backward reads of them (x's gradient, which needs the graph,
// is never recorded). `inputs` are [x, params...].
void restore_inputs(State& s, at::TensorList inputs) {
  s.x = inputs[0];
  for (int i = 0; i < 2; ++i) {
    if (!s.weight[i].defined()) s.weight[i] = inputs[1 + i];
  }
}

void record_forward(StepGraphs& g, const at::Tensor& x, const at::Tensor& colptr,
                    const at::Tensor& row, const at::Tensor& seeds,
                    at::TensorList params, const Options& o,
                    const std::vector<bool>& need) {
  const auto current = at::cuda::getCurrentCUDAStream(x.device().index());
  g.side = side_stream(x.device().index());
  g.seeds = seeds.clone();
  wait(*g.side, current);
  {
    c10::cuda::CUDAStreamGuard on_side(*g.side);
    State warm;
    at::Tensor out = run_forward(x, colptr, row, g.seeds, params, o, &warm);
    run_backward(warm, at::zeros_like(out), need, o, /*copy=*/false);
  }
  {
    c10::cuda::CUDAStreamGuard on_side(*g.side);
    CaptureOwnsCublasWorkspace own_workspace(g.side->stream());
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    g.out = run_forward(x, colptr, row, g.seeds, params, o, &g.state);
    graph->capture_end();
    g.forward = std::move(graph);
  }
  wait(current, *g.side);
  // Hold x and the parameters weakly (see StepGraphs::inputs); the backward
  // recording and the eager fallback get them back from the caller.
  for (const auto& t : {x, colptr, row}) {
    g.inputs.push_back(t.storage().getWeakStorageImpl());
  }
  for (const auto& p : params) g.inputs.push_back(p.storage().getWeakStorageImpl());
  release_inputs(g.state, params);
}

void record_backward(StepGraphs& g, const std::vector<bool>& need,
                     const Options& o) {
  const auto current = at::cuda::getCurrentCUDAStream(g.grad_in.device().index());
  wait(*g.side, current);
  {
    c10::cuda::CUDAStreamGuard on_side(*g.side);
    CaptureOwnsCublasWorkspace own_workspace(g.side->stream());
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    graph->capture_begin(g.forward->pool(), cudaStreamCaptureModeThreadLocal);
    std::vector<at::Tensor> grads =
        run_backward(g.state, g.grad_in, need, o, /*copy=*/false);
    // One buffer for every gradient, so that one clone hands them out.
    int64_t total = 0;
    for (const auto& t : grads) total += t.defined() ? t.numel() : 0;
    g.flat = at::empty({total}, g.grad_in.options().dtype(g.state.param_dtype[0]));
    int64_t start = 0;
    g.grads.assign(grads.size(), at::Tensor());
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) continue;
      g.grads[i] = g.flat.narrow(0, start, grads[i].numel()).view(grads[i].sizes());
      g.grads[i].copy_(grads[i]);
      start += grads[i].numel();
    }
    graph->capture_end();
    g.backward = std::move(graph);
  }
  wait(current, *g.side);
  g.need = need;
}

}  // namespace

at::Tensor replay_forward(const at::Tensor& x, const at::Tensor& colptr,
                          const at::Tensor& row, const at::Tensor& seeds,
                          at::TensorList params, const Options& o,
                          const std::vector<bool>& need,
                          std::shared_ptr<StepGraphs>* lease, Replay* how) {
  *how = Replay::kEager;
  if (!o.replay || !x.is_cuda() || !o.inplace_backward) return {};
  // A traced call (torch.compile's fake or functional tensors, any Python
  // dispatch mode) runs the ATen calls, so that the tracer records them.
  if (x.key_set().has(c10::DispatchKey::Python) ||
      c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::Python)) {
    return {};
  }
  bool any_param = false;
  for (size_t i = 1; i < need.size(); ++i) any_param |= need[i];
  if (!any_param) return {};  // nothing to train: no backward to record
  if (c10::cuda::currentStreamCaptureStatusMayInitCtx() !=
      c10::cuda::CaptureStatus::None) {
    return {};  // the caller records the op itself (CapturedStep)
  }
  // (the Python wrapper warns about these two: both are slow paths)
  if (o.rng_seed != -1 || need[0]) return {};
  // (one flat buffer hands out the gradients: one dtype for all)
  for (const auto& p : params) {
    if (p.scalar_type() != params[0].scalar_type()) return {};
  }
  auto g = lookup(signature(x, colptr, row, seeds, params, o, need));
  if (g->busy) {
    *how = Replay::kBusy;
    return {};
  }
  if (!g->forward) {
    if (++g->seen < 2) return {};  // a shape seen once is not worth a graph
    record_forward(*g, x, colptr, row, seeds, params, o, need);
  }
  g->seeds.copy_(seeds, /*non_blocking=*/true);
  g->forward->replay();
  g->busy = true;
  *how = Replay::kReplayed;
  // The lease: dropping it (after the backward, or with the autograd graph)
  // hands the buffers back.
  *lease = std::shared_ptr<StepGraphs>(g.get(), [g](StepGraphs*) { g->busy = false; });
  return g->out.clone();
}

std::vector<at::Tensor> replay_backward(StepGraphs& g, const at::Tensor& grad,
                                        const std::vector<bool>& need,
                                        const Options& o, at::TensorList inputs) {
  if (g.backward && g.need != need) {
    // e.g. torch.autograd.grad for some of the parameters only
    restore_inputs(g.state, inputs);
    auto grads = run_backward(g.state, grad, need, o, /*copy=*/false);
    release_inputs(g.state, inputs.slice(1));
    return grads;
  }
  if (!g.backward) {
    g.grad_in = grad.clone();
    restore_inputs(g.state, inputs);  // the recording reads them
    record_backward(g, need, o);
    release_inputs(g.state, inputs.slice(1));
  } else {
    g.grad_in.copy_(grad, /*non_blocking=*/true);
  }
  g.backward->replay();
  at::Tensor flat = g.flat.clone();
  std::vector<at::Tensor> grads(g.grads.size());
  int64_t start = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!g.grads[i].defined()) continue;
    grads[i] = flat.narrow(0, start, g.grads[i].numel()).view(g.grads[i].sizes());
    start += g.grads[i].numel();
  }
  return grads;
}

}  // namespace sage_tree
}  // namespace fusesample

#else  // a CPU-only build has no graphs: every call runs eagerly

namespace fusesample {
namespace sage_tree {

class StepGraphs {};

at::Tensor replay_forward(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                          const at::Tensor&, at::TensorList, const Options&,
                          const std::vector<bool>&, std::shared_ptr<StepGraphs>*,
                          Replay* how) {
  *how = Replay::kEager;
  return {};
}

std::vector<at::Tensor> replay_backward(StepGraphs&, const at::Tensor&,
                                        const std::vector<bool>&, const Options&,
                                        at::TensorList) {
  TORCH_INTERNAL_ASSERT(false, "sage_tree: no CUDA graphs in a CPU-only build");
  return {};
}

}  // namespace sage_tree
}  // namespace fusesample

#endif
