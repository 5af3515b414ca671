#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profiler/trace/chrome_json_export.h"
#include "profiler/trace/chrome_json_import.h"
#include "profiler/trace/json_text.h"
#include "tests/common/source_paths.h"

namespace fusionscope::profiler {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpusDir = fs::path(FS_SOURCE_DIR) / ".." / "shared" / "corpus" / "traces";

// A fresh directory per test so parallel ctest runs do not collide.
class TraceExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("fs_profiler_export_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }

  static std::string readAll(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }

  fs::path m_dir;
};

// fromBeginEnd is import provenance: a matched B/E pair is written as X and comes back as a plain X.
void expectSameEvents(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    TraceEvent left = a.events[i];
    TraceEvent right = b.events[i];
    left.fromBeginEnd = right.fromBeginEnd = false;
    ASSERT_EQ(left, right) << "event " << i << " (" << a.events[i].name << ")";
  }
  EXPECT_EQ(a.processes, b.processes);
  EXPECT_EQ(a.threads, b.threads);
}

Trace sampleTrace() {
  Trace trace;
  trace.processes[TrackId::fromNumber(0)] = ProcessInfo{"GPU 0", 1};
  trace.threads[{TrackId::fromNumber(0), TrackId::fromNumber(7)}] = ThreadInfo{"stream 7 \"main\"", std::nullopt};
  TraceEvent kernel;
  kernel.phase = 'X';
  kernel.name = "fusion.1\tkernel";
  kernel.cat = "kernel";
  kernel.pid = TrackId::fromNumber(0);
  kernel.tid = TrackId::fromNumber(7);
  kernel.tsNs = 1234567;
  kernel.durNs = 1001;
  kernel.args = R"({"correlation": 12, "grid": [1, 2, 3]})";
  trace.events.push_back(kernel);
  TraceEvent flow;
  flow.phase = 'f';
  flow.name = "ac2g";
  flow.cat = "ac2g";
  flow.pid = TrackId::fromNumber(0);
  flow.tid = TrackId::fromNumber(7);
  flow.tsNs = -2500;
  flow.id = "12";
  flow.idIsNumber = true;
  flow.bp = "e";
  trace.events.push_back(flow);
  TraceEvent instant;
  instant.phase = 'i';
  instant.name = "marker";
  instant.pid = TrackId::fromText("Traces");
  instant.tid = TrackId::fromText("");
  instant.tsNs = 5;
  instant.id = "0xff";
  instant.extra = R"("s":"g")";
  trace.events.push_back(instant);
  return trace;
}

TEST_F(TraceExportTest, WritesKinetoFieldsInMicrosecondsWithNanosecondPrecision) {
  Trace trace = sampleTrace();
  fs::path path = m_dir / "out.json";
  Status status = exportChromeTrace(trace, path.string());
  ASSERT_TRUE(status.ok()) << status.message();
  nlohmann::json json = nlohmann::json::parse(readAll(path));  // throws, failing the test, if not valid JSON
  EXPECT_EQ(json["displayTimeUnit"], "ns");
  const nlohmann::json& events = json["traceEvents"];
  ASSERT_EQ(events.size(), 6u);  // process_name, process_sort_index, thread_name, then the three events
  EXPECT_EQ(events[0]["ph"], "M");
  EXPECT_EQ(events[0]["name"], "process_name");
  EXPECT_EQ(events[0]["args"]["name"], "GPU 0");
  EXPECT_EQ(events[1]["args"]["sort_index"], 1);
  EXPECT_EQ(events[2]["args"]["name"], "stream 7 \"main\"");
  EXPECT_EQ(events[2]["tid"], 7);
  const nlohmann::json& kernel = events[3];
  EXPECT_EQ(kernel["name"], "fusion.1\tkernel");
  EXPECT_EQ(kernel["cat"], "kernel");
  EXPECT_EQ(kernel["pid"], 0);
  EXPECT_EQ(kernel["tid"], 7);
  EXPECT_DOUBLE_EQ(kernel["ts"].get<double>(), 1234.567);
  EXPECT_DOUBLE_EQ(kernel["dur"].get<double>(), 1.001);
  EXPECT_EQ(kernel["args"]["grid"], nlohmann::json::array({1, 2, 3}));
  EXPECT_EQ(events[4]["id"], 12);
  EXPECT_EQ(events[4]["bp"], "e");
  EXPECT_DOUBLE_EQ(events[4]["ts"].get<double>(), -2.5);
}

TEST_F(TraceExportTest, FormatsNanosecondsAsMicroseconds) {
  std::string out;
  appendNanosAsMicros(out, 1234567);
  out += ' ';
  appendNanosAsMicros(out, 5000);
  out += ' ';
  appendNanosAsMicros(out, -1);
  out += ' ';
  appendNanosAsMicros(out, 1695835542481129000);
  EXPECT_EQ(out, "1234.567 5 -0.001 1695835542481129");
}

TEST_F(TraceExportTest, RoundTripKeepsEventsExactly) {
  Trace trace = sampleTrace();
  fs::path path = m_dir / "round.json";
  ASSERT_TRUE(exportChromeTrace(trace, path.string()).ok());
  StatusOr<Trace> back = importChromeTrace(path.string());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->stats.skippedTotal(), 0);
  expectSameEvents(trace, *back);
}

TEST_F(TraceExportTest, CorpusRoundTripKeepsEventsExactly) {
  if (!fs::exists(kCorpusDir)) GTEST_SKIP() << "trace corpus not found at " << kCorpusDir;
  for (const auto& entry : fs::directory_iterator(kCorpusDir)) {
    SCOPED_TRACE(entry.path().filename().string());
    StatusOr<Trace> original = importChromeTrace(entry.path().string());
    ASSERT_TRUE(original.ok()) << original.status().message();
    fs::path path = m_dir / entry.path().filename();
    Status status = exportChromeTrace(*original, path.string());
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_TRUE(nlohmann::json::accept(readAll(path)));
    StatusOr<Trace> back = importChromeTrace(path.string());
    ASSERT_TRUE(back.ok()) << back.status().message();
    expectSameEvents(*original, *back);
    EXPECT_EQ(back->displayTimeUnit, original->displayTimeUnit.empty() ? "ns" : original->displayTimeUnit);
    EXPECT_EQ(back->otherKeys, original->otherKeys);
    EXPECT_EQ(back->stats.matchedBeginEnd, 0);  // pairs were already folded into X on the first import
  }
}

TEST_F(TraceExportTest, ExportIntoMissingDirectoryFailsAndLeavesNothing) {
  fs::path missing = m_dir / "no" / "such" / "dir";
  fs::path path = missing / "out.json";
  Status status = exportChromeTrace(sampleTrace(), path.string());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find(path.string()), std::string::npos) << status.message();
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_TRUE(fs::is_empty(m_dir));
}

TEST_F(TraceExportTest, ExportReplacesExistingFileAndLeavesNoTemporary) {
  fs::path path = m_dir / "out.json";
  { std::ofstream(path) << "old"; }
  ASSERT_TRUE(exportChromeTrace(sampleTrace(), path.string()).ok());
  EXPECT_NE(readAll(path).find("fusion.1"), std::string::npos);
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(m_dir)) ++files;
  EXPECT_EQ(files, 1u);
}

}  // namespace
}  // namespace fusionscope::profiler
