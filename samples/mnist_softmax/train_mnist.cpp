// fusionscope-mnist-train: trains samples/mnist_softmax on MNIST with FusionScope's engine embedded as a library,
// the way a user's own program would: parse the module, run a pipeline preset, JIT it for the CPU
// (core::CpuExecutable) and drive it with core::FeedbackLoop, which carries W' and b' over into W and b. What is
// MNIST-specific (the IDX files, one-hot labels, test accuracy) lives here, not in the engine or the CLI.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/ir/hlo_verifier.h"
#include "core/pipeline/pass_registry.h"
#include "core/runtime/cpu_executable.h"
#include "core/runtime/feedback_loop.h"
#include "core/text/hlo_parser.h"
#include "samples/mnist_softmax/mnist_data.h"

namespace {

using namespace fusionscope;
using samples::kMnistClasses;
using samples::MnistData;

constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;

// The index of the parameter called `name`, or -1.
int64_t parameterNamed(const core::ExecutionPlan& plan, const std::string& name) {
  for (const core::PlanParameter& p : plan.parameters) {
    if (p.name == name) return p.index;
  }
  return -1;
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Trains the MNIST softmax sample (samples/mnist_softmax) with FusionScope's CPU code"};
  std::string modulePath;
  std::string mnistDir;
  std::string pipeline = "cpu";
  std::string fusion = "on";
  int steps = 1000;
  int threads = 0;
  app.add_option("module", modulePath, "The training step (samples/mnist_softmax/mnist_softmax.hlo)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--steps", steps, "Training steps (batches of 100)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--mnist-dir", mnistDir, "MNIST IDX files, plain or .gz (default: the module's data/ directory)");
  app.add_option("--pipeline", pipeline, "Pass pipeline: gpu, cpu or none")
      ->check(CLI::IsMember({"gpu", "cpu", "none"}))
      ->capture_default_str();
  app.add_option("--fusion", fusion, "Fusion passes on or off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--threads", threads, "Worker threads per kernel (0: all cores)")->check(CLI::Range(0, 1024));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitBadInput;
  }

  StatusOr<std::unique_ptr<core::HloModule>> module = core::parseHloModuleFile(modulePath);
  Status valid = module.ok() ? core::verifyModule(**module) : module.status();
  if (!valid.ok()) {
    fmt::print(stderr, "{}\n", valid.message());
    return kExitBadInput;
  }
  const std::string dir =
      mnistDir.empty() ? (std::filesystem::path(modulePath).parent_path() / "data").string() : mnistDir;
  StatusOr<MnistData> train = samples::loadMnist(dir, "train");
  StatusOr<MnistData> test = samples::loadMnist(dir, "test");
  if (!train.ok() || !test.ok()) {
    fmt::print(stderr, "{}\n", train.ok() ? test.message() : train.message());
    return kExitBadInput;
  }

  StatusOr<std::unique_ptr<core::HloModule>> optimized = core::optimizedCopy(**module, pipeline, fusion == "on");
  if (!optimized.ok()) {
    fmt::print(stderr, "{}: {}\n", modulePath, optimized.message());
    return kExitFailed;
  }
  core::CpuCompileOptions options;
  options.threads = threads;
  StatusOr<std::unique_ptr<core::CpuExecutable>> compiled = core::CpuExecutable::compile(**optimized, options);
  if (!compiled.ok()) {
    fmt::print(stderr, "{}: {}\n", modulePath, compiled.message());
    return kExitFailed;
  }
  core::CpuExecutable& executable = **compiled;
  const core::ExecutionPlan& plan = executable.plan();
  const int64_t x = parameterNamed(plan, "x");
  const int64_t labels = parameterNamed(plan, "labels");
  const int64_t w = parameterNamed(plan, "W");
  const int64_t b = parameterNamed(plan, "b");
  if (x < 0 || labels < 0 || w < 0 || b < 0 ||
      plan.parameters[static_cast<size_t>(x)].shape.dimensions() !=
          std::vector<int64_t>{plan.parameters[static_cast<size_t>(x)].shape.dimension(0), train->pixelsPerImage()}) {
    fmt::print(stderr, "{}: expected parameters W, b, x [batch, {}] and labels [batch, 10] (the mnist_softmax step)\n",
               modulePath, train->pixelsPerImage());
    return kExitBadInput;
  }
  // Softmax regression starts from zero weights, as every parameter of a new FeedbackLoop does.
  StatusOr<core::FeedbackLoop> loop = core::FeedbackLoop::create(executable);
  if (!loop.ok()) {
    fmt::print(stderr, "{}\n", loop.message());
    return kExitBadInput;
  }
  const std::vector<float> oneHot = train->oneHotLabels();
  auto weights = [&](int64_t parameter) {
    return reinterpret_cast<const float*>(
        executable.bufferData(plan.parameters[static_cast<size_t>(parameter)].buffer));
  };
  double firstLoss = NAN;
  double lastLoss = NAN;
  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    Status fed = loop->setBatch(x, train->images.data(), train->count, step);
    if (fed.ok()) fed = loop->setBatch(labels, oneHot.data(), train->count, step);
    if (fed.ok()) fed = loop->step();
    if (!fed.ok()) {
      fmt::print(stderr, "{}\n", fed.message());
      return kExitFailed;
    }
    StatusOr<core::Value> loss = executable.output(0);
    if (loss.ok() && loss->elementCount() == 1) {
      lastLoss = loss->doubleAt(0);
      if (step == 0) firstLoss = lastLoss;
    }
    if (step % 100 == 0 || step + 1 == steps) {
      fmt::print("step {:>5}: loss {:.4f}, test accuracy {:.2f}%\n", step + 1, lastLoss,
                 100.0 * samples::softmaxAccuracy(*test, weights(w), weights(b)));
    }
  }
  const double elapsed = seconds(start);
  fmt::print(
      "trained {} steps in {:.3f} s ({:.1f} us/step, with the accuracy checks): loss {:.4f} -> {:.4f}, "
      "final test accuracy {:.2f}%\n",
      steps, elapsed, elapsed * 1e6 / steps, firstLoss, lastLoss, 100.0 * samples::softmaxAccuracy(*test, weights(w), weights(b)));
  return 0;
}
