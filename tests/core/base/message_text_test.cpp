// Message helpers (fs_base): names shortened for one-line messages, and where text stops being UTF-8.
#include "core/base/message_text.h"

#include <string>

#include <gtest/gtest.h>

namespace fusionscope {
namespace {

TEST(MessageText, LongNamesAreShortenedWithTheirLength) {
  EXPECT_EQ(shortenedForMessage("short"), "short");
  const std::string shortened = shortenedForMessage(std::string(1000, 'x'), 80);
  EXPECT_LT(shortened.size(), 120u);
  EXPECT_NE(shortened.find("(1000 characters)"), std::string::npos) << shortened;
}

TEST(MessageText, FirstInvalidUtf8FindsTheByte) {
  EXPECT_EQ(firstInvalidUtf8(""), std::string_view::npos);
  EXPECT_EQ(firstInvalidUtf8("plain ascii"), std::string_view::npos);
  EXPECT_EQ(firstInvalidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::string_view::npos);  // é € 😀
  EXPECT_EQ(firstInvalidUtf8("ab\xff"), 2u);            // never a lead byte
  EXPECT_EQ(firstInvalidUtf8("a\xc3"), 1u);             // cut short
  EXPECT_EQ(firstInvalidUtf8("a\xc3x"), 1u);            // not a continuation
  EXPECT_EQ(firstInvalidUtf8("\xc0\xaf"), 0u);          // overlong '/'
  EXPECT_EQ(firstInvalidUtf8("\xe0\x80\xaf"), 0u);      // overlong, three bytes
  EXPECT_EQ(firstInvalidUtf8("ok \xed\xa0\x80"), 3u);   // a UTF-16 surrogate
  EXPECT_EQ(firstInvalidUtf8("\xf4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(firstInvalidUtf8("\xe2\x82\xac\x80"), 3u);  // a stray continuation after a valid character
}

}  // namespace
}  // namespace fusionscope
