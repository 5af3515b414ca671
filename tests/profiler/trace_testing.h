#pragma once

#include <string_view>
#include <utility>

#include <gtest/gtest.h>

#include "profiler/trace/chrome_json_import.h"

namespace fusionscope::testing {

// Imports an inline Chrome trace; a failure to import fails the calling test and yields an empty trace.
inline profiler::Trace importOrDie(std::string_view text) {
  StatusOr<profiler::Trace> trace = profiler::importChromeTraceText(text, "inline.json");
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return trace.ok() ? std::move(trace).value() : profiler::Trace{};
}

}  // namespace fusionscope::testing
