#include "samples/mnist_softmax/mnist_data.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "core/io/idx.h"

namespace fusionscope::samples {
namespace {

using core::IdxArray;
using core::kIdxUInt8;
using core::readIdx;

// The first of the usual spellings of an MNIST file that exists in `dir`, or empty.
std::string findFile(const std::string& dir, std::string_view prefix, std::string_view kind, std::string_view idx) {
  const std::string names[] = {
      fmt::format("{}-{}-{}-ubyte", prefix, kind, idx),
      fmt::format("{}-{}-{}-ubyte.gz", prefix, kind, idx),
      fmt::format("{}-{}.{}-ubyte", prefix, kind, idx),
      fmt::format("{}-{}.{}-ubyte.gz", prefix, kind, idx),
  };
  for (const std::string& name : names) {
    std::filesystem::path path = std::filesystem::path(dir) / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return path.string();
  }
  return {};
}

}  // namespace

MnistBatch MnistData::batch(int64_t step, int batchSize) const {
  MnistBatch out;
  if (step < 0 || batchSize <= 0 || count <= 0) return out;
  const int64_t pixels = pixelsPerImage();
  out.batchSize = batchSize;
  out.x.resize(static_cast<size_t>(batchSize * pixels));
  out.labels.assign(static_cast<size_t>(batchSize) * kMnistClasses, 0.0f);
  out.classes.resize(static_cast<size_t>(batchSize));
  // (step * batchSize) mod count without overflowing for large step counts.
  int64_t start = (step % count) * (batchSize % count) % count;
  for (int i = 0; i < batchSize; ++i) {
    int64_t image = (start + i) % count;
    std::copy_n(images.begin() + image * pixels, pixels, out.x.begin() + i * pixels);
    uint8_t label = labels[static_cast<size_t>(image)];
    out.classes[static_cast<size_t>(i)] = label;
    out.labels[static_cast<size_t>(i) * kMnistClasses + label] = 1.0f;
  }
  return out;
}

std::vector<float> MnistData::oneHotLabels() const {
  std::vector<float> out(static_cast<size_t>(count) * kMnistClasses, 0.0f);
  for (size_t i = 0; i < labels.size(); ++i) out[i * kMnistClasses + labels[i]] = 1.0f;
  return out;
}

double softmaxAccuracy(const MnistData& data, const float* w, const float* b) {
  const int64_t pixels = data.pixelsPerImage();
  int64_t correct = 0;
  for (int64_t n = 0; n < data.count; ++n) {
    const float* image = data.images.data() + n * pixels;
    float logits[kMnistClasses];
    std::copy_n(b, kMnistClasses, logits);
    for (int64_t p = 0; p < pixels; ++p) {
      if (image[p] == 0.0f) continue;
      for (int c = 0; c < kMnistClasses; ++c) logits[c] += image[p] * w[p * kMnistClasses + c];
    }
    const int best = static_cast<int>(std::max_element(logits, logits + kMnistClasses) - logits);
    correct += best == data.labels[static_cast<size_t>(n)];
  }
  return data.count > 0 ? static_cast<double>(correct) / static_cast<double>(data.count) : 0.0;
}

StatusOr<MnistData> loadMnist(const std::string& dir, std::string_view split) {
  std::string_view prefix;
  if (split == "train") {
    prefix = "train";
  } else if (split == "test" || split == "t10k") {
    prefix = "t10k";
  } else {
    return Status::error(fmt::format("{}: error: unknown MNIST split '{}' (expected train or test)", dir, split));
  }
  std::string imagesPath = findFile(dir, prefix, "images", "idx3");
  if (imagesPath.empty()) {
    return Status::error(fmt::format(
        "{0}: error: no {1}-images-idx3-ubyte or {1}-images-idx3-ubyte.gz (MNIST {2} images)", dir, prefix, split));
  }
  std::string labelsPath = findFile(dir, prefix, "labels", "idx1");
  if (labelsPath.empty()) {
    return Status::error(fmt::format(
        "{0}: error: no {1}-labels-idx1-ubyte or {1}-labels-idx1-ubyte.gz (MNIST {2} labels)", dir, prefix, split));
  }

  StatusOr<IdxArray> images = readIdx(imagesPath);
  if (!images.ok()) return images.status();
  StatusOr<IdxArray> labels = readIdx(labelsPath);
  if (!labels.ok()) return labels.status();
  if (images->typeCode != kIdxUInt8 || images->dims.size() != 3) {
    return Status::error(
        fmt::format("{}: error: expected unsigned-byte images [N, rows, cols] (magic 0x00000803), got "
                    "type 0x{:02x} with {} dimensions",
                    imagesPath, images->typeCode, images->dims.size()));
  }
  if (labels->typeCode != kIdxUInt8 || labels->dims.size() != 1) {
    return Status::error(
        fmt::format("{}: error: expected unsigned-byte labels [N] (magic 0x00000801), got type "
                    "0x{:02x} with {} dimensions",
                    labelsPath, labels->typeCode, labels->dims.size()));
  }
  if (images->dims[0] != labels->dims[0]) {
    return Status::error(fmt::format("{}: error: {} labels for {} images in {}", labelsPath, labels->dims[0],
                                     images->dims[0], imagesPath));
  }
  if (images->dims[0] == 0) return Status::error(fmt::format("{}: error: no images", imagesPath));
  for (size_t i = 0; i < labels->data.size(); ++i) {
    if (labels->data[i] >= kMnistClasses) {
      return Status::error(
          fmt::format("{}: error: label {} of image {} is not a digit 0..9", labelsPath, labels->data[i], i));
    }
  }

  MnistData data;
  data.count = images->dims[0];
  data.rows = static_cast<int>(images->dims[1]);
  data.cols = static_cast<int>(images->dims[2]);
  data.images.resize(images->data.size());
  for (size_t i = 0; i < images->data.size(); ++i) data.images[i] = static_cast<float>(images->data[i]) / 255.0f;
  data.labels = std::move(labels->data);
  return data;
}

}  // namespace fusionscope::samples
