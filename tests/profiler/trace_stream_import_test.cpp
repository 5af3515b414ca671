// The streaming import (ImportOptions: windows cut between events) against the whole-document parse: the same
// events, metadata, stats and top-level keys on every corpus trace and on hand-made files built to hit its edge
// cases (cuts that land in strings or in arrays of objects, escapes, B/E pairs split across windows, huge events),
// and the same error for a file that is not JSON.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "profiler/trace/chrome_json_import.h"
#include "tests/common/source_paths.h"

namespace fusionscope::profiler {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpusDir = fs::path(FS_SOURCE_DIR) / ".." / "shared" / "corpus" / "traces";

ImportOptions wholeDocument() {
  ImportOptions options;
  options.streamThreshold = SIZE_MAX;
  return options;
}

ImportOptions smallWindows(size_t windowBytes) {
  ImportOptions options;
  options.streamThreshold = 0;
  options.windowBytes = windowBytes;
  return options;
}

void expectSameTrace(const Trace& whole, const Trace& streamed) {
  ASSERT_EQ(whole.events.size(), streamed.events.size());
  for (size_t i = 0; i < whole.events.size(); ++i) {
    ASSERT_EQ(whole.events[i], streamed.events[i]) << "event " << i << " (" << whole.events[i].name << ")";
    EXPECT_TRUE(streamed.text.owns(streamed.events[i].name));
    EXPECT_TRUE(streamed.text.owns(streamed.events[i].args));
  }
  EXPECT_EQ(whole.processes, streamed.processes);
  EXPECT_EQ(whole.threads, streamed.threads);
  EXPECT_EQ(whole.displayTimeUnit, streamed.displayTimeUnit);
  EXPECT_EQ(whole.otherKeys, streamed.otherKeys);
  EXPECT_EQ(whole.stats.eventsRead, streamed.stats.eventsRead);
  EXPECT_EQ(whole.stats.emptyObjects, streamed.stats.emptyObjects);
  EXPECT_EQ(whole.stats.phaseCounts, streamed.stats.phaseCounts);
  EXPECT_EQ(whole.stats.skipped, streamed.stats.skipped);
  EXPECT_EQ(whole.stats.matchedBeginEnd, streamed.stats.matchedBeginEnd);
  EXPECT_EQ(whole.stats.unmatchedBegin, streamed.stats.unmatchedBegin);
  EXPECT_EQ(whole.stats.unmatchedEnd, streamed.stats.unmatchedEnd);
}

class TraceStreamImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("fs_profiler_stream_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }

  std::string write(const std::string& name, const std::string& text) {
    fs::path path = m_dir / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  // Imports `path` both ways and checks they agree; returns the streamed trace's window count.
  int64_t compareBothWays(const std::string& path, size_t windowBytes) {
    StatusOr<Trace> whole = importChromeTrace(path, wholeDocument());
    StatusOr<Trace> streamed = importChromeTrace(path, smallWindows(windowBytes));
    EXPECT_TRUE(whole.ok()) << whole.status().message();
    EXPECT_TRUE(streamed.ok()) << streamed.status().message();
    if (!whole.ok() || !streamed.ok()) return -1;
    EXPECT_EQ(whole->stats.windows, 0);
    expectSameTrace(*whole, *streamed);
    return streamed->stats.windows;
  }

  fs::path m_dir;
};

TEST_F(TraceStreamImportTest, CorpusTracesGiveTheSameTraceInWindows) {
  if (!fs::exists(kCorpusDir)) GTEST_SKIP() << "trace corpus not found at " << kCorpusDir;
  for (const auto& entry : fs::directory_iterator(kCorpusDir)) {
    for (size_t window : {size_t{4096}, size_t{65536}}) {
      SCOPED_TRACE(entry.path().filename().string() + " window " + std::to_string(window));
      int64_t windows = compareBothWays(entry.path().string(), window);
      // Every corpus file is far larger than 4 windows; a fallback to the whole parse would report 0.
      EXPECT_GT(windows, static_cast<int64_t>(fs::file_size(entry.path()) / window / 4));
    }
  }
}

// Many small events, in the array form and the object form with keys before and after the events, with B/E pairs,
// metadata and flows spread over many windows.
std::string manyEvents(bool objectForm) {
  std::string text =
      objectForm ? "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0}],\n\"traceEvents\": [\n" : "[\n";
  for (int i = 0; i < 3000; ++i) {
    if (i > 0) text += ",\n";
    int tid = i % 3;
    switch (i % 6) {
      case 0:
        text += "{\"ph\":\"B\",\"name\":\"step " + std::to_string(i) + "\",\"pid\":1,\"tid\":" + std::to_string(tid) +
                ",\"ts\":" + std::to_string(i * 10) + "}";
        break;
      case 3:
        text += "{\"ph\":\"E\",\"pid\":1,\"tid\":" + std::to_string(tid) + ",\"ts\":" + std::to_string(i * 10 + 5) +
                ",\"args\":{\"end\":" + std::to_string(i) + "}}";
        break;
      case 1:
        text += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":" + std::to_string(i) +
                ",\"args\":{\"name\":\"worker \\\"" + std::to_string(i) + "\\\"\"}}";
        break;
      case 2:
        text += "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":" + std::to_string(i) +
                ",\"pid\":\"Spans\",\"tid\":\"t\\u00e9\",\"ts\":" + std::to_string(i * 10) + ",\"tts\":3}";
        break;
      default:
        text +=
            "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"void kernel<float>(float*)\",\"pid\":0,\"tid\":7,"
            "\"ts\":" +
            std::to_string(i * 10) + ".125,\"dur\":2.5,\"args\":{\"grid\":[1,2,3],\"note\":\"x\\ny\"}}";
    }
  }
  text +=
      objectForm ? "\n],\n\"displayTimeUnit\": \"ms\", \"traceName\": \"t\", \"baseTimeNanoseconds\": 17}\n" : "\n]\n";
  return text;
}

TEST_F(TraceStreamImportTest, ObjectAndArrayFormsSplitAnywhere) {
  std::string object = write("object.json", manyEvents(true));
  std::string array = write("array.json", manyEvents(false));
  for (size_t window : {size_t{64}, size_t{1000}, size_t{7777}, size_t{50000}}) {
    SCOPED_TRACE("window " + std::to_string(window));
    EXPECT_GT(compareBothWays(object, window), 1);
    EXPECT_GT(compareBothWays(array, window), 1);
  }
  StatusOr<Trace> trace = importChromeTrace(object, smallWindows(1000));
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->stats.matchedBeginEnd, 500);
  EXPECT_EQ(trace->displayTimeUnit, "ms");
  ASSERT_EQ(trace->otherKeys.size(), 4u);
  EXPECT_EQ(trace->otherKeys[0].first, "schemaVersion");
  EXPECT_EQ(trace->otherKeys[3].first, "baseTimeNanoseconds");
}

// Cut candidates ('}' ',' '{') inside strings and inside arrays of objects in args: the window that ends at such a
// cut is invalid, so it is undone and cut again by the exact scan; the trace is still the same.
TEST_F(TraceStreamImportTest, BadCutsAreUndoneAndCutAgain) {
  std::string text = "{\"traceEvents\":[";
  for (int i = 0; i < 400; ++i) {
    if (i > 0) text += ",";
    text += "{\"ph\":\"X\",\"name\":\"n" + std::to_string(i) +
            "}, {\\\"\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(i) +
            ",\"args\":{\"list\":[{\"a\":1}, {\"b\":2},{\"c\":[{},{}]}]}}";
  }
  text += "]}";
  std::string path = write("tricky.json", text);
  for (size_t window : {size_t{100}, size_t{333}, size_t{4096}}) {
    SCOPED_TRACE("window " + std::to_string(window));
    EXPECT_GT(compareBothWays(path, window), static_cast<int64_t>(text.size() / window / 2));
  }
  StatusOr<Trace> trace = importChromeTrace(path, smallWindows(333));
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->events.size(), 400u);
  EXPECT_EQ(trace->events[7].name, "n7}, {\"");
  EXPECT_GT(trace->stats.windowRetries, 0);
}

// One event much larger than a window, and a file of one event.
TEST_F(TraceStreamImportTest, EventsLargerThanTheWindow) {
  std::string big(200000, 'x');
  std::string text = "[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"args\":{\"blob\":\"" + big +
                     "\"}},\n {\"ph\":\"i\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":2},{\"ph\":\"X\",\"name\":\"c\","
                     "\"pid\":1,\"tid\":1,\"ts\":3,\"args\":{\"blob\":\"" +
                     big + "\"}}]";
  EXPECT_GE(compareBothWays(write("big.json", text), 1024), 1);
  EXPECT_EQ(compareBothWays(write("one.json", "[{\"ph\":\"i\",\"name\":\"b\",\"ts\":2}]"), 1024), 1);
  EXPECT_EQ(compareBothWays(write("empty.json", "{\"traceEvents\": []}"), 1024), 1);
}

// Errors come from the whole-document parse, so a broken file reports the same message (offset into the real file).
TEST_F(TraceStreamImportTest, BrokenFilesGiveTheWholeParseError) {
  std::string events = manyEvents(true);
  size_t middle = events.find(",\n", events.size() / 2) + 2;  // between two events, not inside a string
  const std::string broken[] = {
      events.substr(0, middle),                                    // truncated mid-file
      events.substr(0, middle) + "}}]] " + events.substr(middle),  // garbage between two events
      events + " trailing",                                        // content after the root
      "  \n hello world",                                          // not JSON at all
  };
  for (size_t i = 0; i < std::size(broken); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    std::string path = write("broken" + std::to_string(i) + ".json", broken[i]);
    StatusOr<Trace> whole = importChromeTrace(path, wholeDocument());
    StatusOr<Trace> streamed = importChromeTrace(path, smallWindows(512));
    ASSERT_FALSE(whole.ok());
    ASSERT_FALSE(streamed.ok());
    EXPECT_EQ(whole.message(), streamed.message());
    EXPECT_NE(streamed.message().find("byte offset"), std::string::npos) << streamed.message();
  }
}

// Random damage (deterministic seed): bytes replaced by the characters that matter to the cutting (braces, commas,
// quotes, backslashes) or deleted. Whatever the damage, the streaming import must agree with the whole-document
// parse: the same trace, or the same error message.
TEST_F(TraceStreamImportTest, RandomlyDamagedFilesAgreeWithTheWholeParse) {
  const std::string original = manyEvents(true).substr(0, 20000);
  std::string base = original.substr(0, original.rfind(",\n")) + "\n]}";
  std::mt19937 random(12345);
  const char kChars[] = "{}[],\"\\: x0";
  int agreedOk = 0;
  int agreedError = 0;
  for (int round = 0; round < 300; ++round) {
    std::string text = base;
    int damages = 1 + static_cast<int>(random() % 3);
    for (int d = 0; d < damages; ++d) {
      size_t at = random() % text.size();
      if (random() % 4 == 0) {
        text.erase(at, 1);
      } else {
        text[at] = kChars[random() % (sizeof kChars - 1)];
      }
    }
    std::string path = write("damaged.json", text);
    SCOPED_TRACE("round " + std::to_string(round));
    for (size_t window : {size_t{200}, size_t{1500}}) {
      StatusOr<Trace> whole = importChromeTrace(path, wholeDocument());
      StatusOr<Trace> streamed = importChromeTrace(path, smallWindows(window));
      ASSERT_EQ(whole.ok(), streamed.ok()) << (whole.ok() ? streamed.message() : whole.message());
      if (whole.ok()) {
        expectSameTrace(*whole, *streamed);
        ++agreedOk;
      } else {
        EXPECT_EQ(whole.message(), streamed.message());
        ++agreedError;
      }
    }
  }
  // Both outcomes must have been exercised for the test to mean something.
  EXPECT_GT(agreedOk, 20);
  EXPECT_GT(agreedError, 20);
}

}  // namespace
}  // namespace fusionscope::profiler
