// fusionscope-mnist-train, the sample program that embeds the engine: it trains samples/mnist_softmax on the
// shipped data and on a user's own IDX files, and refuses a directory without them.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "core/io/idx.h"
#include "tests/common/cli_runner.h"
#include "tests/common/source_paths.h"

namespace {

namespace fs = std::filesystem;

using fusionscope::testing::CliResult;

class TrainMnistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir =
        fs::temp_directory_path() / (std::string("fs_train_mnist_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }
  CliResult train(std::initializer_list<std::string> args) {
    return fusionscope::testing::runProgram(FS_TRAIN_MNIST_PATH, args, m_dir);
  }
  fs::path m_dir;
};

const std::string kMnist = std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo";

// A trainer's run ended well: its summary line shows the loss going down and at least 90 % test accuracy.
void expectLearned(const CliResult& result) {
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(result.out, m, std::regex(R"(loss ([0-9.]+) -> ([0-9.]+), final test accuracy ([0-9.]+)%)")))
      << result.out;
  EXPECT_LT(std::stod(m[2].str()), std::stod(m[1].str())) << "loss decreases";
  EXPECT_GE(std::stod(m[3].str()), 90.0) << result.out;
}

TEST_F(TrainMnistTest, ReachesNinetyPercentOnTheShippedData) {
  CliResult result = train({kMnist, "--pipeline=gpu", "--steps", "1000"});
  expectLearned(result);
}

// The same step compiled ahead of time and linked into a plain program trains as the JIT one does.
TEST_F(TrainMnistTest, AheadOfTimeStepReachesNinetyPercent) {
  CliResult result = fusionscope::testing::runProgram(FS_TRAIN_MNIST_AOT_PATH, {"--steps", "1000"}, m_dir);
  expectLearned(result);
  CliResult bad = fusionscope::testing::runProgram(FS_TRAIN_MNIST_AOT_PATH, {"--mnist-dir", m_dir.string()}, m_dir);
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find(m_dir.string()), std::string::npos) << bad.err;
}

// A small separable IDX set in the MNIST layout (28x28 u8 images, u8 labels): class c lights rows 2c..2c+2 of
// the image, with a per-image pseudo-random speckle so no two images are equal.
void writeTinyMnist(const fs::path& dir, const std::string& prefix, int count, uint32_t seed) {
  fusionscope::core::IdxArray images;
  images.typeCode = fusionscope::core::kIdxUInt8;
  images.dims = {count, 28, 28};
  images.data.assign(static_cast<size_t>(count) * 28 * 28, 0);
  fusionscope::core::IdxArray labels;
  labels.typeCode = fusionscope::core::kIdxUInt8;
  labels.dims = {count};
  uint32_t state = seed;
  for (int n = 0; n < count; ++n) {
    const int label = (n * 7 + static_cast<int>(seed)) % 10;
    labels.data.push_back(static_cast<uint8_t>(label));
    uint8_t* image = images.data.data() + static_cast<size_t>(n) * 28 * 28;
    for (int row = 2 * label + 4; row < 2 * label + 6; ++row) {
      for (int col = 4; col < 24; ++col) image[row * 28 + col] = 220;
    }
    for (int k = 0; k < 30; ++k) {
      state = state * 1664525u + 1013904223u;
      image[(state >> 8) % (28 * 28)] = static_cast<uint8_t>(state >> 24);
    }
  }
  ASSERT_TRUE(fusionscope::core::writeIdx((dir / (prefix + "-images-idx3-ubyte")).string(), images, false).ok());
  ASSERT_TRUE(fusionscope::core::writeIdx((dir / (prefix + "-labels-idx1-ubyte.gz")).string(), labels, true).ok());
}

TEST_F(TrainMnistTest, MnistDirTrainsOnUserIdxFiles) {
  const fs::path data = m_dir / "mnist";
  fs::create_directories(data);
  writeTinyMnist(data, "train", 300, 1);
  writeTinyMnist(data, "t10k", 120, 5);
  CliResult result = train({kMnist, "--steps", "60", "--mnist-dir", data.string()});
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(result.out, m, std::regex(R"(loss ([0-9.]+) -> ([0-9.]+), final test accuracy ([0-9.]+)%)")))
      << result.out;
  EXPECT_LT(std::stod(m[2].str()), 0.5 * std::stod(m[1].str())) << result.out;
  EXPECT_GE(std::stod(m[3].str()), 90.0) << result.out;

  const fs::path empty = m_dir / "empty";
  fs::create_directories(empty);
  CliResult missing = train({kMnist, "--mnist-dir", empty.string()});
  EXPECT_EQ(missing.exitCode, 2) << missing.out << missing.err;
  EXPECT_NE(missing.err.find("train-images-idx3-ubyte"), std::string::npos) << missing.err;
}

TEST_F(TrainMnistTest, RefusesAModuleThatIsNotTheSampleStep) {
  const fs::path module = m_dir / "other.hlo";
  std::ofstream(module) << "HloModule other\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n";
  CliResult result =
      train({module.string(), "--mnist-dir", std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/data"});
  EXPECT_EQ(result.exitCode, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("expected parameters W, b, x"), std::string::npos) << result.err;
}

}  // namespace
