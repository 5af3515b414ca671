#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace fusionscope::samples {

inline constexpr int kMnistClasses = 10;

// One training batch in the layout of samples/mnist_softmax: `x` is f32[batch, rows*cols] and `labels`
// f32[batch, 10] one-hot, both row-major; `classes` holds the label of each row (for accuracy counts).
struct MnistBatch {
  int batchSize = 0;
  std::vector<float> x;
  std::vector<float> labels;
  std::vector<uint8_t> classes;
};

// An MNIST split in memory: `count` images of rows x cols pixels, scaled from 0..255 to [0, 1] and stored
// row-major one after another, and one label (0..9) per image. Invariants: images.size() ==
// count * rows * cols, labels.size() == count, every label < 10.
struct MnistData {
  int64_t count = 0;
  int rows = 0;
  int cols = 0;
  std::vector<float> images;
  std::vector<uint8_t> labels;

  int64_t pixelsPerImage() const { return int64_t{rows} * cols; }

  // Batch `step` of size `batchSize`: images step*batchSize ... step*batchSize+batchSize-1, wrapping around
  // the end of the data, so the sequence of batches cycles through the split deterministically.
  // Requires step >= 0 and batchSize > 0 (anything else gives an empty batch).
  MnistBatch batch(int64_t step, int batchSize) const;
  // Every label as a one-hot row of kMnistClasses floats: the module's `labels` layout for the whole split.
  std::vector<float> oneHotLabels() const;
};

// Test accuracy of the softmax classifier W [pixels, 10], b [10] (row-major) on `data`, computed on the host: the
// share of images whose largest logit is their label's.
double softmaxAccuracy(const MnistData& data, const float* w, const float* b);

// Loads a split from `dir`: "train" reads train-images-idx3-ubyte and train-labels-idx1-ubyte, "test"
// (or "t10k") reads the t10k- files. Each file may be plain or gzip-compressed (`.gz`); the dotted names
// some mirrors use (train-images.idx3-ubyte) are accepted too. Errors name the file and the problem.
StatusOr<MnistData> loadMnist(const std::string& dir, std::string_view split = "train");

}  // namespace fusionscope::samples
