#include "worker/train/test_warnings.h"

#include <optional>
#include <stdexcept>
#include <string>

namespace hpcai500::worker {

bool TestTorchWarningsRequested(const EnvLookup& env) {
  const std::optional<std::string> text = env(kTestTorchWarnVar);
  if (!text.has_value() || *text == "0") return false;
  if (*text == "1") return true;
  throw std::invalid_argument(std::string(kTestTorchWarnVar) + ": '" + *text +
                              "' is not 0 or 1");
}

void RaiseTestWarnings(const torch::Device& device, int epoch, int64_t step) {
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::ones({3}, torch::TensorOptions(device));
  // An out= tensor of another non-empty shape: LibTorch resizes it and warns
  // (aten/src/ATen/native/Resize.cpp), on every call.
  torch::Tensor out = torch::zeros({2}, torch::TensorOptions(device));
  at::add_out(out, x, x);
  // Without `indexing`, meshgrid warns once per process.
  at::meshgrid({x, x});
  TORCH_WARN(kTestWarningText, ": epoch ", epoch, " step ", step, " on ",
             device.str(), " (", kTestTorchWarnVar, ")");
}

}  // namespace hpcai500::worker
