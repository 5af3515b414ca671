// IDX reading and writing (fs_io): plain and gzip files, every element type, and malformed input.
#include "core/io/idx.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "tests/core/testing/corpus.h"

namespace fusionscope::core {
namespace {

namespace fs = std::filesystem;

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out += static_cast<char>(v);
  return out;
}

TEST(Idx, ParsesMnistStyleImagesAndLabels) {
  // Two 2x3 unsigned-byte images: magic 0x00000803, dimensions 2, 2, 3 (big-endian int32).
  std::string images = bytes({0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 255});
  auto parsed = parseIdx(images, "images");
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  EXPECT_EQ(parsed->typeCode, kIdxUInt8);
  EXPECT_EQ(parsed->dims, (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(parsed->data, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 255}));

  // Labels: magic 0x00000801, one dimension; a count above 255 checks the big-endian decoding.
  std::string labels = bytes({0, 0, 8, 1, 0, 0, 1, 2});
  labels.append(258, '\x07');
  auto parsedLabels = parseIdx(labels, "labels");
  ASSERT_TRUE(parsedLabels.ok()) << parsedLabels.message();
  EXPECT_EQ(parsedLabels->dims, (std::vector<int64_t>{258}));
  EXPECT_EQ(parsedLabels->data.size(), 258u);
}

TEST(Idx, RoundTripsPlainAndGzipForEveryType) {
  fs::path dir = testing::scratchDirectory("fs_idx_round_trip");
  for (uint8_t type : {kIdxUInt8, kIdxInt8, kIdxInt16, kIdxInt32, kIdxFloat32, kIdxFloat64}) {
    for (bool gzip : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "type " << int{type} << (gzip ? " gzip" : " plain"));
      IdxArray array{type, {3, 5, 7}, {}};
      for (int64_t i = 0; i < array.elementCount() * idxElementBytes(type); ++i) {
        array.data.push_back(static_cast<uint8_t>(i * 13));
      }
      std::string path = (dir / (gzip ? "a.gz" : "a")).string();
      Status written = writeIdx(path, array, gzip);
      ASSERT_TRUE(written.ok()) << written.message();
      std::string file = testing::readBytes(path);
      if (gzip) {
        EXPECT_EQ(file.substr(0, 2), "\x1f\x8b");
      } else {
        EXPECT_EQ(file.substr(0, 8), bytes({0, 0, type, 3, 0, 0, 0, 3}));
        EXPECT_EQ(file.size(), 4 + 12 + array.data.size());
      }
      auto back = readIdx(path);
      ASSERT_TRUE(back.ok()) << back.message();
      EXPECT_EQ(back->typeCode, type);
      EXPECT_EQ(back->dims, array.dims);
      EXPECT_EQ(back->data, array.data);
    }
  }
  fs::remove_all(dir);
}

TEST(Idx, GzipIsRecognisedByContentAndMembersConcatenate) {
  std::string plain = bytes({0, 0, 8, 1, 0, 0, 0, 4, 9, 8, 7, 6});
  auto first = gzipCompress(plain.substr(0, 6), "t");
  auto second = gzipCompress(plain.substr(6), "t");
  ASSERT_TRUE(first.ok() && second.ok());
  // `cat a.gz b.gz` is one valid gzip file.
  auto parsed = parseIdx(*first + *second, "labels.bin");
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  EXPECT_EQ(parsed->data, (std::vector<uint8_t>{9, 8, 7, 6}));
}

TEST(Idx, RejectsWithClearMessages) {
  auto compressed = gzipCompress(bytes({0, 0, 8, 1, 0, 0, 0, 4, 1, 2, 3, 4}), "t");
  ASSERT_TRUE(compressed.ok());
  std::string corrupt = *compressed;
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0x55);
  corrupt[13] = static_cast<char>(corrupt[13] ^ 0x55);
  struct Case {
    std::string name;
    std::string bytes;
    std::string message;
  };
  const Case cases[] = {
      {"short", bytes({0, 0}), "f: error: not an IDX file: 2 bytes, too short for the magic"},
      {"bad magic", "\x1f\x8a\x08\x01", "f: error: not an IDX file: magic 1f8a0801 does not start with 0000"},
      {"bad type", bytes({0, 0, 7, 1, 0, 0, 0, 0}), "f: error: unknown IDX element type 0x07"},
      {"cut header", bytes({0, 0, 8, 3, 0, 0, 0, 1}),
       "f: error: truncated IDX header: 3 dimensions need 16 bytes, file has 8"},
      {"negative dim", bytes({0, 0, 8, 1, 0xff, 0xff, 0xff, 0xfe}), "f: error: IDX dimension 0 is negative (-2)"},
      {"truncated data", bytes({0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3}),
       "f: error: data is 3 bytes, header says 4 (dimensions [2, 2], 1 bytes per element)"},
      {"extra data", bytes({0, 0, 0x0c, 1, 0, 0, 0, 1, 1, 2, 3, 4, 5}),
       "f: error: data is 5 bytes, header says 4 (dimensions [1], 4 bytes per element)"},
      {"truncated gzip", compressed->substr(0, compressed->size() - 10), "f: error: truncated gzip data"},
      {"corrupt gzip", corrupt, "f: error: corrupt gzip data"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto parsed = parseIdx(c.bytes, "f");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.message().rfind(c.message, 0), 0u) << parsed.message();
  }
}

TEST(Idx, WriteChecksTheArray) {
  fs::path dir = testing::scratchDirectory("fs_idx_write_errors");
  std::string path = (dir / "x.idx").string();
  Status wrongSize = writeIdx(path, IdxArray{kIdxInt32, {2, 2}, std::vector<uint8_t>(15)}, false);
  ASSERT_FALSE(wrongSize.ok());
  EXPECT_EQ(wrongSize.message(), path + ": error: data is 15 bytes, dimensions [2, 2] need 16");
  Status badType = writeIdx(path, IdxArray{0x42, {1}, {1}}, true);
  ASSERT_FALSE(badType.ok());
  EXPECT_EQ(badType.message(), path + ": error: unknown IDX element type 0x42");
  EXPECT_FALSE(fs::exists(path));
  auto missing = readIdx((dir / "missing.gz").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("missing.gz"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fusionscope::core
