// The op namespace and the Python module that loads it.
//
// Importing `pyg_fusesample._C` runs the static TORCH_LIBRARY registrations in
// every translation unit of the extension; the module itself exports nothing
// (ops are reached through `torch.ops.fusesample.*`), as in
// pytorch/extension-cpp.
#include <Python.h>
#include <torch/library.h>

TORCH_LIBRARY(fusesample, m) {
  // Schemas are declared next to each op (TORCH_LIBRARY_FRAGMENT), so one
  // file describes one op; this block only creates the namespace.
}

extern "C" {
PyMODINIT_FUNC PyInit__C(void) {
  static struct PyModuleDef module_def = {
      PyModuleDef_HEAD_INIT, "_C", /*m_doc=*/nullptr, /*m_size=*/-1,
      /*m_methods=*/nullptr};
  return PyModule_Create(&module_def);
}
}
