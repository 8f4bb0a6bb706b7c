// fusesample::sparse_adam_ -- one step of torch.optim.SparseAdam for one
// parameter, in one pass over its gradient's rows.
//
// torch.optim's sparse_adam runs a dozen tensor ops a parameter (two
// sparse_mask lookups, the moment updates, two sparse adds into dense
// tensors, the parameter's sparse add), each a pass over the gradient's rows
// and a launch. This op reads each row's gradient, moments and parameter
// once and writes them once, with the same arithmetic: every operation of
// torch's chain is one separately rounded IEEE operation here too, in the
// same order, so the results are torch's bit for bit on CUDA (on the CPU
// torch's vectorised square root is not correctly rounded; this one is, so a
// parameter there may differ in its last bit; the moments do not).
//
// Contract: param [R, ...] float32 or float64, contiguous; exp_avg and
// exp_avg_sq alike (its state); rows [K] int64, the distinct rows the
// gradient has (a coalesced gradient's indices, in [0, R)); values [K, ...]
// the rows' gradient (param's dtype, K * row size entries). step_size is
// torch's lr * sqrt(1 - beta2^t) / (1 - beta1^t); maximize negates the
// gradient. Updates param, exp_avg and exp_avg_sq in place, rows not named
// untouched. Rows out of range raise on the CPU and trip a device assert on
// CUDA (no host synchronisation). Duplicate rows are the caller's error (the
// optimizer coalesces first, as torch's does).
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("sparse_adam_(Tensor(a!) param, Tensor(b!) exp_avg, "
        "Tensor(c!) exp_avg_sq, Tensor rows, Tensor values, float step_size, "
        "float beta1, float beta2, float eps, bool maximize) -> ()");
}
