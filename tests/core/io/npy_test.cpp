// NumPy .npy reading and writing (fs_io): files NumPy wrote, round trips for every dtype, and the errors
// for what we refuse (big-endian, Fortran order, malformed headers, truncated data).
#include "core/io/npy.h"

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/core/testing/corpus.h"

namespace fusionscope::core {
namespace {

namespace fs = std::filesystem;

std::string fromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

// The bytes of the header preamble + dict that NumPy writes for `dict` (format 1.0), padded like np.save.
std::string npyV1(std::string dict, std::string_view data) {
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict + std::string(data);
}

// Files written by NumPy 2.4 (np.save, and np.lib.format.write_array with version=(2,0)/(3,0)), as hex.
// np.arange(6, dtype='<f4').reshape(2, 3) * 0.5
constexpr std::string_view kF32x2x3 =
    "934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2046616c73652c20277368"
    "617065273a2028322c2033292c207d202020202020202020202020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020200a000000000000003f0000803f0000c03f0000004000002040";
// np.array([0, 1, 254, 255], dtype='u1')
constexpr std::string_view kU8x4 =
    "934e554d5059010076007b276465736372273a20277c7531272c2027666f727472616e5f6f72646572273a2046616c73652c20277368"
    "617065273a2028342c292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020200a0001feff";
// np.array(True): a zero-dimensional array
constexpr std::string_view kBoolScalar =
    "934e554d5059010076007b276465736372273a20277c6231272c2027666f727472616e5f6f72646572273a2046616c73652c20277368"
    "617065273a2028292c207d20202020202020202020202020202020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020200a01";
// np.array([-1, 2**40, 7], dtype='<i8'), format 2.0
constexpr std::string_view kI64x3V2 =
    "934e554d50590200740000007b276465736372273a20273c6938272c2027666f727472616e5f6f72646572273a2046616c73652c2027"
    "7368617065273a2028332c292c207d202020202020202020202020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020200affffffffffffffff00000000000100000700000000000000";
// np.array([1.0, -2.5], dtype='<f2'), format 3.0
constexpr std::string_view kF16x2V3 =
    "934e554d50590300740000007b276465736372273a20273c6632272c2027666f727472616e5f6f72646572273a2046616c73652c2027"
    "7368617065273a2028322c292c207d202020202020202020202020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020200a003c00c1";

// np.save(f, np.array([1.0, -2.5, 0.15625], dtype=ml_dtypes.bfloat16)): what JAX's bf16 arrays become, a '<V2'.
constexpr std::string_view kBf16x3 =
    "934e554d5059010076007b276465736372273a20273c5632272c2027666f727472616e5f6f72646572273a2046616c73652c20277368"
    "617065273a2028332c292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020200a803f20c0203e";

template <typename T>
std::vector<T> values(const NpyArray& array) {
  std::vector<T> out(array.bytes.size() / sizeof(T));
  std::memcpy(out.data(), array.bytes.data(), array.bytes.size());
  return out;
}

std::string bytesOf(const void* data, size_t size) {
  return std::string(static_cast<const char*>(data), size);
}

TEST(Npy, ReadsFilesNumPyWrote) {
  auto f32 = parseNpy(fromHex(kF32x2x3), "f32.npy");
  ASSERT_TRUE(f32.ok()) << f32.message();
  EXPECT_EQ(f32->type, PrimitiveType::kF32);
  EXPECT_EQ(f32->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(*f32), (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));

  auto u8 = parseNpy(fromHex(kU8x4), "u8.npy");
  ASSERT_TRUE(u8.ok()) << u8.message();
  EXPECT_EQ(u8->type, PrimitiveType::kU8);
  EXPECT_EQ(u8->dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(u8->bytes, std::string("\x00\x01\xfe\xff", 4));

  auto scalar = parseNpy(fromHex(kBoolScalar), "b.npy");
  ASSERT_TRUE(scalar.ok()) << scalar.message();
  EXPECT_EQ(scalar->type, PrimitiveType::kPred);
  EXPECT_TRUE(scalar->dims.empty());
  EXPECT_EQ(scalar->elementCount(), 1);
  EXPECT_EQ(scalar->bytes, "\x01");

  auto i64 = parseNpy(fromHex(kI64x3V2), "i64.npy");
  ASSERT_TRUE(i64.ok()) << i64.message();
  EXPECT_EQ(i64->type, PrimitiveType::kS64);
  EXPECT_EQ(values<int64_t>(*i64), (std::vector<int64_t>{-1, int64_t{1} << 40, 7}));

  auto f16 = parseNpy(fromHex(kF16x2V3), "f16.npy");
  ASSERT_TRUE(f16.ok()) << f16.message();
  EXPECT_EQ(f16->type, PrimitiveType::kF16);
  EXPECT_EQ(values<uint16_t>(*f16), (std::vector<uint16_t>{0x3c00, 0xc100}));  // 1.0, -2.5 in binary16

  auto bf16 = parseNpy(fromHex(kBf16x3), "bf16.npy");
  ASSERT_TRUE(bf16.ok()) << bf16.message();
  EXPECT_EQ(bf16->type, PrimitiveType::kBF16);
  EXPECT_EQ(values<uint16_t>(*bf16), (std::vector<uint16_t>{0x3f80, 0xc020, 0x3e20}));  // 1.0, -2.5, 0.15625
}

TEST(Npy, WritesWhatNumPyWrites) {
  // Format 1.0 files come out byte-for-byte as np.save writes them.
  for (std::string_view hex : {kF32x2x3, kU8x4, kBoolScalar}) {
    std::string file = fromHex(hex);
    auto array = parseNpy(file, "in.npy");
    ASSERT_TRUE(array.ok()) << array.message();
    auto written = serializeNpy(*array, "out.npy");
    ASSERT_TRUE(written.ok()) << written.message();
    EXPECT_EQ(*written, file);
  }
}

TEST(Npy, RoundTripsEveryDtype) {
  fs::path dir = testing::scratchDirectory("fs_npy_round_trip");
  struct Case {
    PrimitiveType type;
    std::string_view descr;
    int bytes;
  };
  const Case cases[] = {
      {PrimitiveType::kF32, "<f4", 4}, {PrimitiveType::kF64, "<f8", 8},    {PrimitiveType::kF16, "<f2", 2},
      {PrimitiveType::kS32, "<i4", 4}, {PrimitiveType::kS64, "<i8", 8},    {PrimitiveType::kU32, "<u4", 4},
      {PrimitiveType::kU8, "|u1", 1},  {PrimitiveType::kS8, "|i1", 1},     {PrimitiveType::kPred, "|b1", 1},
      {PrimitiveType::kS16, "<i2", 2}, {PrimitiveType::kU16, "<u2", 2},    {PrimitiveType::kU64, "<u8", 8},
      {PrimitiveType::kC64, "<c8", 8}, {PrimitiveType::kC128, "<c16", 16}, {PrimitiveType::kBF16, "<V2", 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(primitiveTypeName(c.type)));
    EXPECT_EQ(npyDescr(c.type), c.descr);
    for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{}, {0}, {5}, {2, 3, 4}, {3, 0, 2}}) {
      NpyArray array{c.type, dims, {}};
      for (int64_t i = 0; i < array.elementCount() * c.bytes; ++i) {
        array.bytes += static_cast<char>(c.type == PrimitiveType::kPred ? (i % 2) : (i * 37 + 11) & 0xff);
      }
      std::string path = (dir / "a.npy").string();
      Status written = writeNpy(path, array);
      ASSERT_TRUE(written.ok()) << written.message();
      std::string file = testing::readBytes(path);
      EXPECT_EQ(file.size() % 64, array.bytes.size() % 64);  // data starts 64-byte aligned
      EXPECT_NE(file.find(std::string("'descr': '") + std::string(c.descr) + "'"), std::string::npos);
      auto back = readNpy(path);
      ASSERT_TRUE(back.ok()) << back.message();
      EXPECT_EQ(back->type, c.type);
      EXPECT_EQ(back->dims, dims);
      EXPECT_EQ(back->bytes, array.bytes);
    }
  }
  fs::remove_all(dir);
}

TEST(Npy, MnistSizedArraysRoundTrip) {
  NpyArray w{PrimitiveType::kF32, {784, 10}, std::string(784 * 10 * 4, '\0')};
  for (int i = 0; i < 7840; ++i) {
    float v = 0.001f * static_cast<float>(i) - 3.0f;
    std::memcpy(w.bytes.data() + 4 * i, &v, 4);
  }
  auto file = serializeNpy(w, "W.npy");
  ASSERT_TRUE(file.ok()) << file.message();
  EXPECT_EQ(file->substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  auto back = parseNpy(*file, "W.npy");
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->bytes, w.bytes);
}

TEST(Npy, LargeHeaderUsesVersion2) {
  // 25000 dimensions of 1 make a header longer than format 1.0's 16-bit length.
  NpyArray array{PrimitiveType::kU8, std::vector<int64_t>(25000, 1), "\x2a"};
  auto file = serializeNpy(array, "deep.npy");
  ASSERT_TRUE(file.ok()) << file.message();
  EXPECT_EQ((*file)[6], '\x02');
  EXPECT_EQ(file->size() % 64, 1u);
  auto back = parseNpy(*file, "deep.npy");
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->dims.size(), 25000u);
  EXPECT_EQ(back->bytes, "\x2a");
}

TEST(Npy, AcceptsHeaderVariants) {
  const std::string data = bytesOf("\x01\x02\x03\x04", 4);
  // Double quotes, other key order, no trailing comma, Python 2 long literals, no padding space.
  for (std::string dict : {
           std::string(R"({"shape": (4,), "fortran_order": False, "descr": "|u1"})"),
           std::string("{'descr':'|u1','fortran_order':False,'shape':(4L,)}"),
           std::string("{'descr': '<u1', 'fortran_order': False, 'shape': (2, 2), }"),
       }) {
    SCOPED_TRACE(dict);
    auto array = parseNpy(npyV1(dict, data), "v.npy");
    ASSERT_TRUE(array.ok()) << array.message();
    EXPECT_EQ(array->type, PrimitiveType::kU8);
    EXPECT_EQ(array->bytes, data);
  }
}

struct BadFile {
  std::string name;
  std::string bytes;
  std::string message;
};

TEST(Npy, RejectsWithClearMessages) {
  const std::string f4 = std::string(16, '\0');
  const std::vector<BadFile> cases = {
      {"big-endian", npyV1("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", f4),
       "x.npy: error: unsupported dtype '>f4' (big-endian)"},
      {"fortran", npyV1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", f4),
       "x.npy: error: fortran_order=True is not supported"},
      {"truncated data", npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f4.substr(0, 12)),
       "x.npy: error: data is 12 bytes, header says 16"},
      {"extra data", npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f4 + "xxxx"),
       "x.npy: error: data is 20 bytes, header says 16"},
      {"object dtype", npyV1("{'descr': '|O', 'fortran_order': False, 'shape': (4,), }", f4),
       "x.npy: error: unsupported dtype '|O'"},
      {"datetime dtype", npyV1("{'descr': '<M8', 'fortran_order': False, 'shape': (2,), }", f4),
       "x.npy: error: unsupported dtype '<M8'"},
      {"structured dtype", npyV1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", f4),
       "x.npy: error: unsupported dtype (structured"},
      {"no shape", npyV1("{'descr': '<f4', 'fortran_order': False, }", f4), "x.npy: error: header has no 'shape'"},
      {"negative dim", npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", f4),
       "x.npy: error: shape holds something other than non-negative integers"},
      {"unknown key", npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", f4),
       "x.npy: error: unexpected key 'x'"},
      {"not a dict", npyV1("descr", f4), "x.npy: error: header does not start with '{'"},
      {"huge shape", npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", f4),
       "x.npy: error: shape (4294967296, 4294967296) is too large"},
      {"no magic", "PK\x03\x04 zip file", "x.npy: error: not a .npy file"},
      {"empty", "", "x.npy: error: not a .npy file"},
      {"cut preamble", std::string("\x93NUMPY\x01\x00", 8), "x.npy: error: truncated .npy preamble"},
      {"version 4", std::string("\x93NUMPY\x04\x00\x10\x00", 10), "x.npy: error: unsupported .npy format version 4.0"},
      {"cut header", std::string("\x93NUMPY\x01\x00\x76\x00{'descr'", 17),
       "x.npy: error: header is 118 bytes, file has only 7 after the preamble"},
  };
  for (const BadFile& c : cases) {
    SCOPED_TRACE(c.name);
    auto array = parseNpy(c.bytes, "x.npy");
    ASSERT_FALSE(array.ok());
    EXPECT_EQ(array.message().rfind(c.message, 0), 0u) << array.message();
  }
}

TEST(Npy, ReadAndWriteErrorsNameTheFile) {
  auto missing = readNpy("/nonexistent/dir/w.npy");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("/nonexistent/dir/w.npy"), std::string::npos) << missing.message();

  fs::path dir = testing::scratchDirectory("fs_npy_errors");
  std::string path = (dir / "w.npy").string();
  Status wrongSize = writeNpy(path, NpyArray{PrimitiveType::kF32, {2, 2}, std::string(12, '\0')});
  ASSERT_FALSE(wrongSize.ok());
  EXPECT_EQ(wrongSize.message(), path + ": error: data is 12 bytes, shape (2, 2) of '<f4' needs 16");
  // An 8-bit float has no .npy dtype of its own (bf16 has: the 2-byte void np.save writes for it).
  Status f8 = writeNpy(path, NpyArray{PrimitiveType::kF8E4M3FN, {1}, std::string(1, '\0')});
  ASSERT_FALSE(f8.ok());
  EXPECT_EQ(f8.message(), path + ": error: element type f8e4m3fn cannot be stored in .npy");
  EXPECT_FALSE(fs::exists(path));  // nothing written on failure
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fusionscope::core
