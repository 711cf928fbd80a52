// het.distributed._hetccl: the Python face of the hetccl backend. The
// creator function and the options live in Python (het/distributed).
#include "Errors.h"
#include "HetcclBackend.h"

#include <torch/csrc/utils/pybind.h>

#include <cstring>

namespace py = pybind11;
using het::torchccl::HetcclBackend;

namespace {

hetcclAlgo_t algorithmNamed(const std::string& name) {
  hetcclAlgo_t algo;
  if (hetcclAlgoFromName(name.c_str(), &algo) != hetcclSuccess)
    throw py::value_error(
        "hetccl: unknown algorithm '" + name +
        "' (auto, ring, tree, halving_doubling, hierarchical, ps, oneshot, twoshot)");
  return algo;
}

hetcclCompression_t compressionNamed(const std::string& name) {
  static const std::pair<const char*, hetcclCompression_t> names[] = {
      {"none", hetcclCompressNone}, {"fp16", hetcclCompressFp16}, {"bf16", hetcclCompressBf16},
      {"int8", hetcclCompressInt8}, {"topk", hetcclCompressTopK}};
  for (auto& [n, z] : names)
    if (name == n) return z;
  throw py::value_error("hetccl: unknown compression '" + name + "' (none, fp16, bf16, int8, topk)");
}

} // namespace

PYBIND11_MODULE(_hetccl, m) {
  m.doc() = "hetccl as a torch.distributed backend (use het.distributed, not this module)";
  // c10d's Backend, Store and Work must be registered before ours refers to them.
  py::module_::import("torch.distributed");

  py::class_<HetcclBackend, c10d::Backend, c10::intrusive_ptr<HetcclBackend>>(m, "HetcclBackend")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, int64_t timeoutMs,
                       const std::string& algorithm, const std::string& compression, double topkRatio) {
             het::torchccl::Settings s;
             s.timeout = std::chrono::milliseconds(timeoutMs);
             s.algorithm = algorithmNamed(algorithm);
             s.compression = compressionNamed(compression);
             s.topkRatio = topkRatio;
             py::gil_scoped_release noGil; // the other ranks connect meanwhile
             return c10::make_intrusive<HetcclBackend>(store, rank, size, s);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout_ms"), py::arg("algorithm"),
           py::arg("compression"), py::arg("topk_ratio"))
      .def(
          "allreduce_compressed",
          [](HetcclBackend& self, at::Tensor& tensor, const std::string& compression, double topkRatio,
             bool average) {
            auto z = compressionNamed(compression);
            py::gil_scoped_release noGil;
            return self.allreduceCompressed(tensor, z, topkRatio, average);
          },
          py::arg("tensor"), py::arg("compression"), py::arg("topk_ratio") = 0.0, py::arg("average") = false,
          "A float32 all-reduce with this compression for this call only; returns a Work.")
      .def("abort", &HetcclBackend::abort, py::call_guard<py::gil_scoped_release>(),
           "End every call in flight and later with an error (any thread).")
      .def("bytes_sent", &HetcclBackend::bytesSent, py::call_guard<py::gil_scoped_release>(),
           "Bytes this rank's collectives have written to hetccl's transports.")
      .def_property_readonly("algorithm",
                             [](const HetcclBackend& self) { return hetcclAlgoName(self.settings().algorithm); })
      .def_property_readonly("timeout_ms",
                             [](const HetcclBackend& self) { return int64_t(self.settings().timeout.count()); });

  m.def("version", [] {
    int v = 0;
    het::torchccl::check(hetcclGetVersion(&v), nullptr, "version");
    return v;
  });
}
