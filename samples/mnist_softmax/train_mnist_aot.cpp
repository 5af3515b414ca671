// fusionscope-mnist-train-aot: trains samples/mnist_softmax with the training step compiled ahead of time. The build
// runs `fusionscope-cli compile mnist_softmax.hlo --target host --cpp-class mnist::TrainStep`, which writes
// TrainStep.h and TrainStep.o, and links the object like any other: no FusionScope library, no LLVM, no JIT at run
// time (the IDX loader is the sample's own). Compare fusionscope-mnist-train, which JIT-compiles the same module.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "TrainStep.h"
#include "samples/mnist_softmax/mnist_data.h"

namespace {

using fusionscope::samples::MnistData;

constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;

// The step's parameters are W, b, x, labels (samples/mnist_softmax/README.md); the header states their shapes.
constexpr int kBatch = static_cast<int>(mnist::TrainStep::kArg2Shape[0]);
constexpr int64_t kPixels = mnist::TrainStep::kArg2Shape[1];
static_assert(mnist::TrainStep::kArg0Shape[0] == kPixels && mnist::TrainStep::kArg3Shape[0] == kBatch,
              "the sample's step: W [pixels, 10], b [10], x [batch, pixels], labels [batch, 10]");

int usage(const char* program) {
  std::fprintf(stderr, "usage: %s [--steps N] [--mnist-dir DIR]  (default: 1000 steps, the shipped data)\n", program);
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 1000;
  std::string dir = FS_MNIST_DEFAULT_DIR;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--steps" && i + 1 < argc) {
      char* end = nullptr;
      const long value = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || value <= 0 || value > 100'000'000) return usage(argv[0]);
      steps = static_cast<int>(value);
    } else if (arg == "--mnist-dir" && i + 1 < argc) {
      dir = argv[++i];
    } else {
      return usage(argv[0]);
    }
  }
  fusionscope::StatusOr<MnistData> train = fusionscope::samples::loadMnist(dir, "train");
  fusionscope::StatusOr<MnistData> test = fusionscope::samples::loadMnist(dir, "test");
  if (!train.ok() || !test.ok()) {
    std::fprintf(stderr, "%s\n", (train.ok() ? test.message() : train.message()).c_str());
    return kExitBadInput;
  }
  if (train->pixelsPerImage() != kPixels) {
    std::fprintf(stderr, "%s: images of %lld pixels, the compiled step takes %lld\n", dir.c_str(),
                 static_cast<long long>(train->pixelsPerImage()), static_cast<long long>(kPixels));
    return kExitBadInput;
  }

  mnist::TrainStep step;  // W and b start at zero (the arguments block is zeroed)
  if (!step.ok()) {
    std::fprintf(stderr, "cannot allocate the training step's buffers\n");
    return kExitFailed;
  }
  float firstLoss = NAN;
  float lastLoss = NAN;
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    // Batch s: images s*batch ... s*batch+batch-1, wrapping around the end (as MnistData::batch), copied straight
    // into the step's argument buffers.
    float* labels = step.arg_labels_data();
    std::memset(labels, 0, step.arg_size(3));
    for (int i = 0; i < kBatch; ++i) {
      const int64_t image = (int64_t{s} * kBatch + i) % train->count;
      std::memcpy(step.arg_x_data() + i * kPixels, train->images.data() + image * kPixels, kPixels * sizeof(float));
      labels[i * fusionscope::samples::kMnistClasses + train->labels[static_cast<size_t>(image)]] = 1.0f;
    }
    if (!step.Run()) {
      std::fprintf(stderr, "the training step failed to run (out of memory)\n");
      return kExitFailed;
    }
    // W' and b' alias W and b (input_output_alias): the step updated them in place.
    lastLoss = *step.result_loss_data();
    if (s == 0) firstLoss = lastLoss;
    if (s % 100 == 0 || s + 1 == steps) {
      std::printf("step %5d: loss %.4f, test accuracy %.2f%%\n", s + 1, lastLoss,
                  100.0 * fusionscope::samples::softmaxAccuracy(*test, step.arg_W_data(), step.arg_b_data()));
    }
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "trained %d steps in %.3f s (%.1f us/step, with the accuracy checks): loss %.4f -> %.4f, final test accuracy "
      "%.2f%%\n",
      steps, elapsed, elapsed * 1e6 / steps, firstLoss, lastLoss,
      100.0 * fusionscope::samples::softmaxAccuracy(*test, step.arg_W_data(), step.arg_b_data()));
  return 0;
}
