#include "core/text/attribute_text.h"

#include <gtest/gtest.h>

namespace fusionscope::core {
namespace {

TEST(AttributeText, QuotedStringsUnescapeAndRoundTrip) {
  std::string value;
  ASSERT_FALSE(parseQuoted(R"("a\"b\\c\nd")", value));
  EXPECT_EQ(value, "a\"b\\c\nd");
  ASSERT_FALSE(parseQuoted(quoted("x\"y\\z"), value));
  EXPECT_EQ(value, "x\"y\\z");
}

TEST(AttributeText, ErrorsPointIntoTheValue) {
  std::string value;
  std::string_view unterminated = R"("abc)";
  auto err = parseQuoted(unterminated, value);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->at, unterminated.data());

  std::vector<int64_t> ints;
  std::string_view list = "{1, x}";
  err = parseIntList(list, ints);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->at - list.data(), 4);
  EXPECT_EQ(err->message, "expected an integer");
}

TEST(AttributeText, MetadataKeepsKnownAndUnknownFields) {
  OpMetadata metadata;
  ASSERT_FALSE(parseMetadata(R"({op_type="Add" op_name="jit(f)/add" source_file="/a/b.py" source_line=7)"
                             R"( stack_frame_id=3 profile_type={1,2} deduplicated_name="x"})",
                             metadata));
  EXPECT_EQ(metadata.opType, "Add");
  EXPECT_EQ(metadata.opName, "jit(f)/add");
  EXPECT_EQ(metadata.sourceFile, "/a/b.py");
  EXPECT_EQ(metadata.sourceLine, 7);
  EXPECT_EQ(metadata.extra, R"(stack_frame_id=3 profile_type={1,2} deduplicated_name="x")");
}

TEST(AttributeText, WindowAndPaddingParseEveryField) {
  Window window;
  ASSERT_FALSE(parseWindow("{size=3x3 stride=2x1 pad=1_1x0_2 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}", window));
  ASSERT_EQ(window.dims.size(), 2u);
  EXPECT_EQ(window.dims[0].stride, 2);
  EXPECT_EQ(window.dims[1].padHigh, 2);
  EXPECT_EQ(window.dims[1].baseDilation, 2);
  EXPECT_EQ(window.dims[0].windowDilation, 2);
  EXPECT_TRUE(window.dims[1].reversal);
  auto err = parseWindow("{size=3 bogus=1}", window);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "unknown window field 'bogus'");

  std::vector<PaddingDim> padding;
  ASSERT_FALSE(parsePadding("0_1x2_3_1", padding));
  ASSERT_EQ(padding.size(), 2u);
  EXPECT_EQ(padding[1].interior, 1);
}

TEST(AttributeText, NameListsInBothForms) {
  std::vector<std::string_view> names;
  bool braced = false;
  ASSERT_FALSE(parseNameList("%add.1", names, braced));
  EXPECT_FALSE(braced);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0], "add.1");
  ASSERT_FALSE(parseNameList("{%a, %b.2}", names, braced));
  EXPECT_TRUE(braced);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[1], "b.2");
}

}  // namespace
}  // namespace fusionscope::core
