// The MNIST sample's loader: the dataset shipped with samples/mnist_softmax loads with the right counts and
// classes, batches are the module's f32[100,784] / one-hot f32[100,10] layout, and a softmax regression
// trained exactly as mnist_softmax.hlo trains (batch 100, learning rate 0.5, zero init) learns it.
#include "samples/mnist_softmax/mnist_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/io/idx.h"
#include "tests/core/testing/corpus.h"

namespace fusionscope::samples {
namespace {

using core::IdxArray;
using core::kIdxUInt8;
using core::writeIdx;

namespace fs = std::filesystem;

std::string dataDir() {
  return (testing::samplesDir() / "mnist_softmax" / "data").string();
}

TEST(Mnist, ShippedDatasetLoads) {
  auto train = loadMnist(dataDir(), "train");
  ASSERT_TRUE(train.ok()) << train.message();
  EXPECT_EQ(train->count, 6000);
  EXPECT_EQ(train->rows, 28);
  EXPECT_EQ(train->cols, 28);
  EXPECT_EQ(train->images.size(), 6000u * 784);
  auto test = loadMnist(dataDir(), "test");
  ASSERT_TRUE(test.ok()) << test.message();
  EXPECT_EQ(test->count, 1000);

  // Balanced classes, pixels in [0, 1] with a mostly empty background like MNIST.
  for (const MnistData* data : {&*train, &*test}) {
    std::vector<int64_t> histogram(kMnistClasses, 0);
    for (uint8_t label : data->labels) ++histogram[label];
    EXPECT_EQ(histogram, std::vector<int64_t>(kMnistClasses, data->count / kMnistClasses));
    auto [lo, hi] = std::minmax_element(data->images.begin(), data->images.end());
    EXPECT_EQ(*lo, 0.0f);
    EXPECT_EQ(*hi, 1.0f);
    int64_t zeros = std::count(data->images.begin(), data->images.end(), 0.0f);
    EXPECT_GT(zeros, static_cast<int64_t>(data->images.size() / 2));
  }
}

// A directory with tiny plain (uncompressed) files: 3 images of 2x2 with pixel value = 10*image + pixel.
class TinyMnist : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = testing::scratchDirectory("fs_mnist_tiny");
    IdxArray images{kIdxUInt8, {3, 2, 2}, {}};
    for (int i = 0; i < 3; ++i) {
      for (int p = 0; p < 4; ++p) images.data.push_back(static_cast<uint8_t>(i == 2 && p == 3 ? 255 : 10 * i + p));
    }
    ASSERT_TRUE(writeIdx((m_dir / "train-images-idx3-ubyte").string(), images, false).ok());
    ASSERT_TRUE(
        writeIdx((m_dir / "train-labels-idx1-ubyte").string(), IdxArray{kIdxUInt8, {3}, {4, 0, 9}}, false).ok());
  }
  void TearDown() override { fs::remove_all(m_dir); }
  fs::path m_dir;
};

TEST_F(TinyMnist, BatchesCycleWithOneHotLabels) {
  auto data = loadMnist(m_dir.string());
  ASSERT_TRUE(data.ok()) << data.message();
  ASSERT_EQ(data->count, 3);
  EXPECT_EQ(data->images[5], 11.0f / 255.0f);
  EXPECT_EQ(data->images[11], 1.0f);

  // Batch size 2 over 3 images: step 0 = images 0,1; step 1 = 2,0; step 2 = 1,2; step 3 = 0,1 again.
  const std::vector<std::vector<int>> expected = {{0, 1}, {2, 0}, {1, 2}, {0, 1}};
  for (int64_t step = 0; step < 4; ++step) {
    SCOPED_TRACE(step);
    MnistBatch batch = data->batch(step, 2);
    ASSERT_EQ(batch.batchSize, 2);
    ASSERT_EQ(batch.x.size(), 2u * 4);
    ASSERT_EQ(batch.labels.size(), 2u * 10);
    for (int row = 0; row < 2; ++row) {
      int image = expected[static_cast<size_t>(step)][static_cast<size_t>(row)];
      for (int p = 0; p < 4; ++p) EXPECT_EQ(batch.x[row * 4 + p], data->images[image * 4 + p]);
      uint8_t label = data->labels[static_cast<size_t>(image)];
      EXPECT_EQ(batch.classes[static_cast<size_t>(row)], label);
      for (int c = 0; c < 10; ++c) EXPECT_EQ(batch.labels[row * 10 + c], c == label ? 1.0f : 0.0f);
    }
  }
  // A batch larger than the data wraps within the batch; huge step numbers do not overflow.
  MnistBatch big = data->batch(0, 7);
  EXPECT_EQ(big.classes, (std::vector<uint8_t>{4, 0, 9, 4, 0, 9, 4}));
  MnistBatch far = data->batch(int64_t{1} << 62, 2);  // starts at (2^62 * 2) mod 3 = 2
  EXPECT_EQ(far.classes, (std::vector<uint8_t>{9, 4}));
  EXPECT_EQ(data->batch(-1, 2).batchSize, 0);
  EXPECT_EQ(data->batch(0, 0).batchSize, 0);
}

TEST_F(TinyMnist, ErrorsNameTheFile) {
  auto test = loadMnist(m_dir.string(), "test");
  ASSERT_FALSE(test.ok());
  EXPECT_EQ(test.message(),
            m_dir.string() + ": error: no t10k-images-idx3-ubyte or t10k-images-idx3-ubyte.gz (MNIST test images)");
  auto split = loadMnist(m_dir.string(), "validation");
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.message(), m_dir.string() + ": error: unknown MNIST split 'validation' (expected train or test)");

  std::string labels = (m_dir / "train-labels-idx1-ubyte").string();
  ASSERT_TRUE(writeIdx(labels, IdxArray{kIdxUInt8, {3}, {4, 10, 9}}, false).ok());
  auto badLabel = loadMnist(m_dir.string());
  ASSERT_FALSE(badLabel.ok());
  EXPECT_EQ(badLabel.message(), labels + ": error: label 10 of image 1 is not a digit 0..9");

  ASSERT_TRUE(writeIdx(labels, IdxArray{kIdxUInt8, {2}, {4, 1}}, false).ok());
  auto count = loadMnist(m_dir.string());
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.message().find("2 labels for 3 images"), std::string::npos) << count.message();

  // A gzip file is found when the plain one is absent.
  fs::remove(labels);
  ASSERT_TRUE(writeIdx(labels + ".gz", IdxArray{kIdxUInt8, {3}, {1, 2, 3}}, true).ok());
  auto gz = loadMnist(m_dir.string());
  ASSERT_TRUE(gz.ok()) << gz.message();
  EXPECT_EQ(gz->labels, (std::vector<uint8_t>{1, 2, 3}));

  std::string images = (m_dir / "train-images-idx3-ubyte").string();
  ASSERT_TRUE(writeIdx(images, IdxArray{kIdxUInt8, {12}, std::vector<uint8_t>(12)}, false).ok());
  auto flat = loadMnist(m_dir.string());
  ASSERT_FALSE(flat.ok());
  EXPECT_EQ(flat.message().rfind(images + ": error: expected unsigned-byte images [N, rows, cols]", 0), 0u)
      << flat.message();
}

// Softmax regression exactly as mnist_softmax.hlo computes one step (f32, mean cross-entropy over the batch,
// W -= 0.5 * x^T (softmax - labels) / N, b likewise), on the batches MnistData::batch gives.
class SoftmaxRegression {
 public:
  explicit SoftmaxRegression(int64_t pixels) : m_pixels(pixels), m_w(static_cast<size_t>(pixels) * 10, 0.0f), m_b(10) {}

  void step(const MnistBatch& batch, float learningRate) {
    std::vector<float> dlogits(static_cast<size_t>(batch.batchSize) * 10);
    for (int i = 0; i < batch.batchSize; ++i) {
      float p[10];
      softmax(&batch.x[static_cast<size_t>(i * m_pixels)], p);
      for (int c = 0; c < 10; ++c) dlogits[i * 10 + c] = (p[c] - batch.labels[i * 10 + c]) / batch.batchSize;
    }
    for (int i = 0; i < batch.batchSize; ++i) {
      const float* x = &batch.x[static_cast<size_t>(i * m_pixels)];
      for (int64_t k = 0; k < m_pixels; ++k) {
        if (x[k] == 0.0f) continue;  // most pixels are background
        for (int c = 0; c < 10; ++c) m_w[k * 10 + c] -= learningRate * x[k] * dlogits[i * 10 + c];
      }
      for (int c = 0; c < 10; ++c) m_b[c] -= learningRate * dlogits[i * 10 + c];
    }
  }

  double accuracy(const MnistData& data) const {
    int64_t correct = 0;
    for (int64_t i = 0; i < data.count; ++i) {
      float p[10];
      softmax(&data.images[static_cast<size_t>(i * m_pixels)], p);
      correct += std::max_element(p, p + 10) - p == data.labels[static_cast<size_t>(i)];
    }
    return static_cast<double>(correct) / static_cast<double>(data.count);
  }

 private:
  void softmax(const float* x, float* p) const {
    for (int c = 0; c < 10; ++c) p[c] = m_b[c];
    for (int64_t k = 0; k < m_pixels; ++k) {
      if (x[k] == 0.0f) continue;
      for (int c = 0; c < 10; ++c) p[c] += x[k] * m_w[k * 10 + c];
    }
    float max = *std::max_element(p, p + 10);
    float sum = 0;
    for (int c = 0; c < 10; ++c) sum += p[c] = std::exp(p[c] - max);
    for (int c = 0; c < 10; ++c) p[c] /= sum;
  }

  int64_t m_pixels;
  std::vector<float> m_w;
  std::vector<float> m_b;
};

TEST(Mnist, ShippedDatasetIsLearnableButNotTrivial) {
  auto train = loadMnist(dataDir(), "train");
  auto test = loadMnist(dataDir(), "test");
  ASSERT_TRUE(train.ok() && test.ok());
  SoftmaxRegression model(train->pixelsPerImage());
  std::vector<double> testAccuracy;
  for (int64_t step = 0; step < 1000; ++step) {
    model.step(train->batch(step, 100), 0.5f);
    if (step + 1 == 10 || step + 1 == 100 || step + 1 == 1000) {
      testAccuracy.push_back(model.accuracy(*test));
      std::printf("after %lld steps: train accuracy %.3f, test accuracy %.3f\n", static_cast<long long>(step + 1),
                  model.accuracy(*train), testAccuracy.back());
    }
  }
  // The README's claim: learning is visible (well below the final accuracy after 10 steps) and ends >= 92%.
  EXPECT_LT(testAccuracy[0], 0.80);
  EXPECT_GT(testAccuracy[1], testAccuracy[0]);
  EXPECT_GE(testAccuracy[2], 0.92);
}

}  // namespace
}  // namespace fusionscope::samples
