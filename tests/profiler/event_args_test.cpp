// Event args read one way (simdjson) by every reader in fs_profiler, the CLI and the viewer
// (profiler/trace/event_args.h): only a valid top-level object says anything, a key written twice means its last
// value.
#include "profiler/trace/event_args.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace fusionscope::profiler {
namespace {

using Values = std::vector<std::pair<std::string, double>>;

TEST(EventArgsTest, ArgStringLastValueOfATopLevelKey) {
  EXPECT_EQ(argString(R"({"hlo_op":"a","hlo_op":"b"})", "hlo_op"), "b");
  EXPECT_EQ(argString(R"({"hlo_op":"a","hlo_op":1})", "hlo_op"), std::nullopt);
  EXPECT_EQ(argString(R"({"hlo_op":"a\u002eb","x":{}})", "hlo_op"), "a.b");
  EXPECT_EQ(argString(R"({"hlo_op":"a","x":[1,,2]})", "hlo_op"), "a");             // plain: read in place
  EXPECT_EQ(argString(R"({"hlo_op":"a\"","x":[1,,2]})", "hlo_op"), std::nullopt);  // parsed: not JSON
}

// Counters: numbers, and strings that start with one (std::stod), in key order; anything else is left out.
TEST(EventArgsTest, CounterValuesAreNumbersByKey) {
  EXPECT_EQ(counterValues(R"({"b":2,"a":"1.5","c":"n/a","d":[1],"e":true,"f":null})"), (Values{{"a", 1.5}, {"b", 2}}));
  EXPECT_EQ(counterValues(R"({"a":1,"a":3})"), (Values{{"a", 3}}));
  EXPECT_EQ(counterValues(R"({"a":-1e3,"b":"7 MB","c":18446744073709551615})"),
            (Values{{"a", -1000}, {"b", 7}, {"c", 18446744073709551615.0}}));
  EXPECT_EQ(counterValues(R"({"a":1,"b":[1,,2]})"), Values{});
  EXPECT_EQ(counterValues("7"), Values{});
  EXPECT_EQ(counterValues(""), Values{});
}

}  // namespace
}  // namespace fusionscope::profiler
