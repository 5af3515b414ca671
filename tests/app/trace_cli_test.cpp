// Runs the real fusionscope-cli trace subcommands (stats, compare): output, --json, exit codes and one-line
// messages for bad files.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/common/cli_runner.h"
#include "tests/common/source_paths.h"

namespace {

namespace fs = std::filesystem;

const fs::path kCorpusDir = fs::path(FS_SOURCE_DIR) / ".." / "shared" / "corpus" / "traces";

using fusionscope::testing::readAll;
using fusionscope::testing::shellQuoted;
using Result = fusionscope::testing::CliResult;

class TraceCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            (std::string("fs_trace_cli_test_") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
             std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }

  Result run(std::initializer_list<std::string> args) {
    return fusionscope::testing::runProgram(FS_CLI_PATH, args, m_dir);
  }

  std::string write(const std::string& name, const std::string& content) {
    fs::path path = m_dir / name;
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  }

  fs::path m_dir;
};

constexpr const char* kBefore = R"([
  {"ph":"X","cat":"kernel","name":"add.1","pid":0,"tid":7,"ts":0,"dur":10,"args":{"bytes_read":800,"bytes_written":400}},
  {"ph":"X","cat":"kernel","name":"multiply.2","pid":0,"tid":7,"ts":12,"dur":8},
  {"ph":"X","cat":"kernel","name":"exponential.3","pid":0,"tid":7,"ts":20,"dur":5}])";
constexpr const char* kAfter = R"([
  {"ph":"X","cat":"kernel","name":"fusion.1","pid":0,"tid":7,"ts":0,"dur":9},
  {"ph":"X","cat":"kernel","name":"exponential.3","pid":0,"tid":7,"ts":9,"dur":5}])";
constexpr const char* kStages =
    R"({"stages":[{"index":1,"fusion_list":[{"name":"fusion.1","members":["add.1","multiply.2"]}]}]})";

TEST_F(TraceCliTest, StatsPrintsKernelTable) {
  Result r = run({"stats", write("before.json", kBefore)});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("kernels: 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel time: 23.000 us"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("multiply.2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bytes moved: 1.20 kB"), std::string::npos) << r.out;
}

TEST_F(TraceCliTest, StatsJson) {
  Result r = run({"stats", write("before.json", kBefore), "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["kernel_count"], 3);
  EXPECT_EQ(json["kernel_time_ns"], 23000);
  EXPECT_EQ(json["names"][0]["name"], "add.1");
  EXPECT_EQ(json["gaps"]["total_ns"], 2000);
}

TEST_F(TraceCliTest, CompareWithStagesMapsFusion) {
  Result r = run({"compare", write("before.json", kBefore), write("after.json", kAfter), "--stages",
                  write("stages.json", kStages), "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["before"]["kernel_count"], 3);
  EXPECT_EQ(json["after"]["kernel_count"], 2);
  ASSERT_EQ(json["mappings"].size(), 2u);
  EXPECT_EQ(json["mappings"][0]["after"], "fusion.1");
  EXPECT_EQ(json["mappings"][0]["before"], nlohmann::json({"add.1", "multiply.2"}));
  EXPECT_NEAR(json["mappings"][0]["speedup"].get<double>(), 2.0, 1e-9);

  Result text = run({"compare", (m_dir / "before.json").string(), (m_dir / "after.json").string(), "--stages",
                     (m_dir / "stages.json").string()});
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("kernels launched"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("speedup 2.00x [stages.json]"), std::string::npos) << text.out;
}

TEST_F(TraceCliTest, BadFilesGiveOneLineAndExitTwo) {
  std::string good = write("good.json", kBefore);
  for (const auto& args :
       {std::initializer_list<std::string>{"stats", (m_dir / "missing.json").string()},
        std::initializer_list<std::string>{"stats", write("junk.json", "hello")},
        std::initializer_list<std::string>{"compare", good, (m_dir / "junk.json").string()},
        std::initializer_list<std::string>{"compare", good, good, "--stages", write("bad_stages.json", "{\"x\":1}")}}) {
    Result r = run(args);
    EXPECT_EQ(r.exitCode, 2) << r.out;
    EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected one line: " << r.err;
  }
  Result junk = run({"stats", (m_dir / "junk.json").string()});
  EXPECT_NE(junk.err.find("junk.json"), std::string::npos) << junk.err;
  EXPECT_NE(junk.err.find("byte offset"), std::string::npos) << junk.err;
}

TEST_F(TraceCliTest, StatsOnEveryCorpusTrace) {
  if (!fs::exists(kCorpusDir)) GTEST_SKIP() << "trace corpus not found at " << kCorpusDir;
  for (const auto& entry : fs::directory_iterator(kCorpusDir)) {
    Result r = run({"stats", entry.path().string(), "--json"});
    ASSERT_EQ(r.exitCode, 0) << entry.path() << ": " << r.err;
    EXPECT_TRUE(nlohmann::json::accept(r.out)) << entry.path();
  }
}

// Real JAX profiles (jax 0.10, MNIST step, 5 runs on the CPU, tests/data/xla/mnist_step): XLA's thunks carry
// args.hlo_op and no category, and traceEvents ends with `{}`.
const fs::path kXlaData = fs::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "mnist_step";

TEST_F(TraceCliTest, StatsCountsXlaKernelsOfRealJaxProfiles) {
  for (const char* file : {"perfetto-fused.json.gz", "profile-unfused.json.gz"}) {
    Result r = run({"stats", (kXlaData / file).string()});
    ASSERT_EQ(r.exitCode, 0) << file << ": " << r.err;
    EXPECT_EQ(r.out.find("malformed"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("kernels: 0"), std::string::npos) << r.out;
    Result json = run({"stats", (kXlaData / file).string(), "--json"});
    ASSERT_EQ(json.exitCode, 0) << json.err;
    nlohmann::json s = nlohmann::json::parse(json.out);
    EXPECT_GT(s["kernel_count"].get<int64_t>(), 0) << file;
    EXPECT_EQ(s["names_are_kernels"], true) << file;
  }
}

// Unfused against fused through both runs' after_optimizations modules. XLA renames instructions as it fuses (and
// wraps every unfused op in a `wrapped_<op>` fusion), so kernels are matched by what their ops compute; every
// unfused launch is claimed once.
TEST_F(TraceCliTest, CompareRealJaxPairThroughXlaModules) {
  const std::string before = (kXlaData / "perfetto-unfused.json.gz").string();
  const std::string after = (kXlaData / "perfetto-fused.json.gz").string();
  Result r = run({"compare", before, after, "--fused-hlo", (kXlaData / "fused").string(), "--unfused-hlo",
                  (kXlaData / "unfused" / "module_0018.jit_step.cpu_after_optimizations.txt").string(), "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json c = nlohmann::json::parse(r.out);
  const int64_t kernelsBefore = c["before"]["kernel_count"];
  const int64_t kernelsAfter = c["after"]["kernel_count"];
  EXPECT_GT(kernelsAfter, 0);
  EXPECT_GT(kernelsBefore, kernelsAfter);
  int64_t claimed = 0;
  int fusionsMappedToSeveral = 0;
  nlohmann::json multiplySubtract;
  for (const nlohmann::json& m : c["mappings"]) {
    ASSERT_FALSE(m["before"].empty()) << m.dump();
    claimed += m["before_count"].get<int64_t>();
    if (m["via"] == "fused+unfused HLO" && m["before"].size() >= 2) ++fusionsMappedToSeveral;
    if (m["after"] == "multiply_subtract_fusion.1") multiplySubtract = m;
  }
  EXPECT_EQ(claimed, kernelsBefore);
  EXPECT_TRUE(c["unmapped_before"].empty()) << c["unmapped_before"].dump();
  EXPECT_GE(fusionsMappedToSeveral, 4);
  // w - 0.5 * dot: the broadcast of 0.5, the multiply and the subtract, three unfused kernels (read off both modules).
  ASSERT_FALSE(multiplySubtract.is_null());
  std::vector<std::string> replaced = multiplySubtract["before"];
  std::sort(replaced.begin(), replaced.end());
  EXPECT_EQ(replaced, (std::vector<std::string>{"wrapped_broadcast.4", "wrapped_multiply.2", "wrapped_subtract.1"}));
  EXPECT_GT(multiplySubtract["speedup"].get<double>(), 1.0);

  // The xplane-converted profile of the same runs gives the same kernels.
  Result profile =
      run({"compare", (kXlaData / "profile-unfused.json.gz").string(), (kXlaData / "profile-fused.json.gz").string(),
           "--fused-hlo", (kXlaData / "fused").string(), "--unfused-hlo", (kXlaData / "unfused").string(), "--json"});
  ASSERT_EQ(profile.exitCode, 0) << profile.err;
  nlohmann::json p = nlohmann::json::parse(profile.out);
  EXPECT_EQ(p["before"]["kernel_count"], kernelsBefore);
  EXPECT_EQ(p["after"]["kernel_count"], kernelsAfter);
  EXPECT_TRUE(p["unmapped_before"].empty());

  Result text = run({"compare", before, after, "--fused-hlo", (kXlaData / "fused").string(), "--unfused-hlo",
                     (kXlaData / "unfused").string()});
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("[fused+unfused HLO]"), std::string::npos) << text.out;
}

// The values of every sample of a pprof profile.proto, read with a minimal protobuf walker (no library: the test
// checks the bytes the CLI writes, not what a library would accept).
std::vector<int64_t> pprofSampleValues(const std::string& bytes) {
  size_t at = 0;
  auto varint = [&](const std::string& b, size_t& i) {
    uint64_t value = 0;
    for (int shift = 0; i < b.size() && shift < 64; shift += 7) {
      const auto byte = static_cast<uint8_t>(b[i++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) break;
    }
    return value;
  };
  std::vector<int64_t> values;
  while (at < bytes.size()) {
    const uint64_t key = varint(bytes, at);
    const int field = static_cast<int>(key >> 3);
    const int wire = static_cast<int>(key & 7);
    if (wire == 0) {
      varint(bytes, at);
      continue;
    }
    EXPECT_EQ(wire, 2) << "only varints and length-delimited fields in a profile";
    if (wire != 2) return values;
    const size_t length = varint(bytes, at);
    const std::string body = bytes.substr(at, length);
    at += length;
    if (field != 2) continue;  // Profile.sample
    for (size_t i = 0; i < body.size();) {
      const uint64_t sampleKey = varint(body, i);
      const size_t n = varint(body, i);
      const std::string packed = body.substr(i, n);
      i += n;
      if ((sampleKey >> 3) != 2) continue;  // Sample.value (packed int64)
      for (size_t j = 0; j < packed.size();) values.push_back(static_cast<int64_t>(varint(packed, j)));
    }
  }
  return values;
}

// Kernel time by the program's own lines (issue 41), on the real JAX profile of the MNIST step and XLA's dump of
// it: every launch matches the module, the rows add up to the kernel total, the top row is a line of the program's
// .py file (the loss: its dot), and the pprof profile holds the same total.
TEST_F(TraceCliTest, StatsAttributesKernelTimeToSourceLinesScopesAndOps) {
  const std::string trace = (kXlaData / "perfetto-fused.json.gz").string();
  const std::string dump = (kXlaData / "fused").string();
  for (const char* by : {"source", "scope", "op", "fusion"}) {
    SCOPED_TRACE(by);
    Result r = run({"stats", trace, "--hlo", dump, "--by", by, "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    nlohmann::json a = nlohmann::json::parse(r.out);
    EXPECT_EQ(a["by"], by);
    EXPECT_GT(a["kernel_count"].get<int64_t>(), 0);
    EXPECT_EQ(a["matched_kernels"], a["kernel_count"]);
    EXPECT_EQ(a["matched_ns"], a["kernel_total_ns"]);
    double sum = 0;
    for (const nlohmann::json& row : a["rows"]) sum += row["ns"].get<double>();
    EXPECT_NEAR(sum, a["kernel_total_ns"].get<double>(), 0.01 * a["kernel_total_ns"].get<double>());
    if (std::string(by) == "source") {
      const std::string top = a["rows"][0]["source"];
      EXPECT_NE(top.find("interop/jax_programs.py:"), std::string::npos) << r.out;
    }
  }
  const std::string pprof = (m_dir / "step.pb.gz").string();
  Result r = run({"stats", trace, "--hlo", dump, "--json", "--pprof", pprof});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const int64_t total = nlohmann::json::parse(r.out)["kernel_total_ns"];
  std::ifstream in(pprof, std::ios::binary);
  const std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(gz.size(), 2u);
  ASSERT_EQ(static_cast<uint8_t>(gz[0]), 0x1f) << "gzipped";
  std::string bytes;
  {
    const std::string plain = (m_dir / "step.pb").string();
    ASSERT_EQ(std::system(("gzip -dc '" + pprof + "' > '" + plain + "'").c_str()), 0);
    std::ifstream p(plain, std::ios::binary);
    bytes.assign((std::istreambuf_iterator<char>(p)), std::istreambuf_iterator<char>());
  }
  const std::vector<int64_t> values = pprofSampleValues(bytes);
  ASSERT_FALSE(values.empty());
  int64_t sampled = 0;
  for (int64_t v : values) sampled += v;
  EXPECT_NEAR(static_cast<double>(sampled), static_cast<double>(total), static_cast<double>(values.size()));
}

// Before and after per source line: the softmax's line (98) is where fusion saved time; the JSON says so.
TEST_F(TraceCliTest, CompareBySourceLineJoinsBothRuns) {
  Result r = run({"compare", (kXlaData / "perfetto-unfused.json.gz").string(),
                  (kXlaData / "perfetto-fused.json.gz").string(), "--by", "source", "--unfused-hlo",
                  (kXlaData / "unfused").string(), "--fused-hlo", (kXlaData / "fused").string(), "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json c = nlohmann::json::parse(r.out);
  EXPECT_EQ(c["before"]["matched_kernels"], c["before"]["kernel_count"]);
  EXPECT_EQ(c["after"]["matched_kernels"], c["after"]["kernel_count"]);
  bool found = false;
  for (const nlohmann::json& row : c["rows"]) {
    if (row["source"].get<std::string>().find("jax_programs.py:98") == std::string::npos) continue;
    found = true;
    EXPECT_GT(row["saved_ns"].get<double>(), 0) << row.dump();
  }
  EXPECT_TRUE(found) << r.out;
}

// The share model: a fusion's launch is split among its members by their estimated operations, here a dot of 4x2
// outputs over k=8 (64) and an add of 8 outputs (8): 8/9 and 1/9 of the 900 ns, marked estimated; a kernel of one
// operation keeps its time exactly.
TEST_F(TraceCliTest, StatsSharesAFusionByItsMembersEstimatedOperations) {
  const std::string module = write("f.hlo", R"(HloModule m
fused {
  p0 = f32[4,8] parameter(0)
  p1 = f32[8,2] parameter(1)
  d = f32[4,2] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/dot_general"}
  ROOT a = f32[4,2] add(d, d), metadata={op_name="jit(f)/add"}
}
ENTRY e {
  x = f32[4,8] parameter(0)
  y = f32[8,2] parameter(1)
  f = f32[4,2] fusion(x, y), kind=kOutput, calls=fused
  ROOT n = f32[4,2] negate(f), metadata={op_name="jit(f)/neg"}
}
)");
  const std::string trace = write("t.json", R"([
  {"ph":"X","cat":"kernel","name":"f","pid":0,"tid":7,"ts":0,"dur":0.9},
  {"ph":"X","cat":"kernel","name":"n","pid":0,"tid":7,"ts":1,"dur":0.1}])");
  Result r = run({"stats", trace, "--hlo", module, "--by", "op", "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json a = nlohmann::json::parse(r.out);
  EXPECT_EQ(a["kernel_total_ns"], 1000);
  std::map<std::string, nlohmann::json> rows;
  for (const nlohmann::json& row : a["rows"]) rows[row["op"]] = row;
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_NEAR(rows["dot_general"]["ns"].get<double>(), 800, 1e-6);
  EXPECT_NEAR(rows["add"]["ns"].get<double>(), 100, 1e-6);
  EXPECT_EQ(rows["dot_general"]["estimated"], true);
  EXPECT_NEAR(rows["neg"]["ns"].get<double>(), 100, 1e-6);
  EXPECT_EQ(rows["neg"]["estimated"], false);
  EXPECT_EQ(rows["neg"]["kernels"], 1);
}

// A trace whose kernels ran none of the module's instructions says so with the counts (exit 2); --by without --hlo
// is a usage error.
TEST_F(TraceCliTest, StatsWithAModuleTheTraceDidNotRunSaysSo) {
  const std::string module = write("other.hlo", "HloModule other\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n");
  Result r = run({"stats", write("t.json", kAfter), "--hlo", module});
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("none of the trace's 2 kernel launches ran an instruction of"), std::string::npos) << r.err;
  EXPECT_EQ(run({"stats", write("u.json", kAfter), "--by", "op"}).exitCode, 2);
}

// With the fused module alone, members are instruction names, which XLA:CPU's unfused kernels (wrapped_*) never
// carry: only the kernels fusion left alone map, by name. What --unfused-hlo is for.
TEST_F(TraceCliTest, CompareWithFusedHloAloneMapsByMemberNames) {
  Result r = run({"compare", (kXlaData / "perfetto-unfused.json.gz").string(),
                  (kXlaData / "perfetto-fused.json.gz").string(), "--fused-hlo",
                  (kXlaData / "fused" / "module_0018.jit_step.cpu_after_optimizations.txt").string(), "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json c = nlohmann::json::parse(r.out);
  for (const nlohmann::json& m : c["mappings"]) {
    if (m["after"] == "dot") {
      EXPECT_EQ(m["before"], nlohmann::json::array({"dot"}));
    }
    if (m["after"] == "multiply_subtract_fusion.1") {
      EXPECT_EQ(m["via"], "fused HLO");
      EXPECT_TRUE(m["before"].empty()) << m.dump();
    }
  }
  EXPECT_FALSE(c["unmapped_before"].empty());
}

TEST_F(TraceCliTest, CompareFusedHloErrorsAreOneLine) {
  const std::string before = (kXlaData / "perfetto-unfused.json.gz").string();
  const std::string after = (kXlaData / "perfetto-fused.json.gz").string();
  // A dump of another module only (the trace's kernels ran in jit_step).
  fs::create_directories(m_dir / "other");
  fs::copy_file(kXlaData / "fused" / "module_0018.jit_step.cpu_after_optimizations.txt",
                m_dir / "other" / "module_0003.jit_other.cpu_after_optimizations.txt");
  fs::create_directories(m_dir / "empty");
  // A directory with no HLO, another module's dump, and a file that is not HLO.
  for (const std::string& hlo :
       {(m_dir / "empty").string(), (m_dir / "other").string(), write("junk.txt", "HloModule\n")}) {
    Result r = run({"compare", before, after, "--fused-hlo", hlo});
    EXPECT_EQ(r.exitCode, 2) << r.out;
    EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected one line: " << r.err;
  }
  Result otherModule = run({"compare", before, after, "--fused-hlo", (m_dir / "other").string()});
  EXPECT_NE(otherModule.err.find("'jit_step'"), std::string::npos) << otherModule.err;
  EXPECT_NE(run({"compare", before, after, "--unfused-hlo", (kXlaData / "unfused").string()}).exitCode, 0);
}

// This machine has no GPU driver: `trace` must say so and exit 3 without running anything or leaving a file.
TEST_F(TraceCliTest, TraceWithoutDriverSaysSoAndExitsThree) {
  if (void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY)) {
    ::dlclose(driver);
    GTEST_SKIP() << "a CUDA driver is installed here";
  }
  std::string output = (m_dir / "timeline.ctf.json").string();
  std::string marker = (m_dir / "ran").string();
  Result r = run({"trace", "-o", output, "--", "/bin/sh", "-c", "touch " + marker});
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_TRUE(r.err.find("no CUDA driver found") != std::string::npos ||
              r.err.find("no CUPTI collector") != std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(output));
  EXPECT_FALSE(fs::exists(marker));
}

// With a stand-in libcuda.so.1 (tests/app/stub_libcuda.cpp) the command gets past its driver check: it must set
// CUDA_INJECTION64_PATH and FUSIONSCOPE_TRACE for the program, pass a SIGTERM sent to the CLI on to the program, and
// report what the collector captured and dropped from the summary the collector writes into the trace. The program
// here is a shell script that, on SIGTERM, puts such a trace where the injected collector would write it.
TEST_F(TraceCliTest, TraceForwardsSigtermAndReportsCapturedAndDroppedRecords) {
  fs::path ready = m_dir / "ready";
  fs::path env = m_dir / "env.txt";
  fs::path output = m_dir / "timeline.ctf.json";
  fs::path err = m_dir / "stderr.txt";
  std::string trace =
      R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2}],)"
      R"("fusionscope_cupti":{"records":{"kernel":1,"runtime":4},"unknown_records":2,"dropped_records":3}})";
  std::string prepared = write("collected.json", trace);
  std::string script =
      "trap 'cp \"$FS_TEST_COLLECTED\" \"$FUSIONSCOPE_TRACE\"; exit 0' TERM; "
      "echo \"$CUDA_INJECTION64_PATH api=$FUSIONSCOPE_TRACE_API\" > " +
      shellQuoted(env.string()) + "; touch " + shellQuoted(ready.string()) + "; while :; do sleep 0.05; done";
  pid_t cli = ::fork();
  ASSERT_GE(cli, 0);
  if (cli == 0) {
    ::setenv("LD_LIBRARY_PATH", FS_STUB_DRIVER_DIR, 1);
    ::setenv("FS_TEST_COLLECTED", prepared.c_str(), 1);
    std::FILE* errFile = std::freopen(err.c_str(), "w", stderr);
    if (errFile == nullptr) ::_exit(125);
    ::execl(FS_CLI_PATH, FS_CLI_PATH, "trace", "-o", output.c_str(), "--api", "all", "--", "/bin/sh", "-c",
            script.c_str(), static_cast<char*>(nullptr));
    ::_exit(126);
  }
  for (int i = 0; i < 1000 && !fs::exists(ready); ++i) {
    int status = 0;
    if (::waitpid(cli, &status, WNOHANG) == cli) {
      std::string message = readAll(err);
      if (message.find("no CUPTI collector") != std::string::npos) GTEST_SKIP() << message;
      FAIL() << "fusionscope-cli ended early: " << message;
    }
    ::usleep(10000);
  }
  ASSERT_TRUE(fs::exists(ready)) << readAll(err);
  ASSERT_EQ(::kill(cli, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(cli, &status, 0), cli);
  ASSERT_TRUE(WIFEXITED(status)) << readAll(err);
  EXPECT_EQ(WEXITSTATUS(status), 0) << readAll(err);
  std::string message = readAll(err);
  EXPECT_NE(message.find("1 events; 7 activity records captured, 3 dropped"), std::string::npos) << message;
  EXPECT_NE(message.find("program exit code 0"), std::string::npos) << message;
  EXPECT_NE(readAll(env).find("libfusionscope_inject.so"), std::string::npos) << readAll(env);
  EXPECT_NE(readAll(env).find("api=all"), std::string::npos) << readAll(env);  // --api reaches the collector
}

TEST_F(TraceCliTest, TraceWithoutCommandIsUsageError) {
  Result r = run({"trace", "-o", (m_dir / "t.json").string()});
  EXPECT_EQ(r.exitCode, 2) << r.err;
}

TEST_F(TraceCliTest, TraceWithAnUnknownApiLevelIsUsageError) {
  std::string marker = (m_dir / "ran").string();
  Result r = run({"trace", "--api", "some", "--", "/bin/sh", "-c", "touch " + marker});
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("--api"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(marker));
}

// The real pipeline end to end: the MNIST sample run on the CPU unfused and fused with --trace, its cpu-pipeline
// dump for stages.json, then `compare --stages` and `stats` on the two traces.
TEST_F(TraceCliTest, CompareRunTracesOfTheMnistSampleFusedAndUnfused) {
  std::string sample = std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo";
  std::string off = (m_dir / "off.json").string();
  std::string on = (m_dir / "on.json").string();
  std::string dump = (m_dir / "dump").string();
  Result r = run({"run", sample, "--fusion=off", "--iterations", "3", "--threads", "1", "--trace", off});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = run({"run", sample, "--fusion=on", "--iterations", "3", "--threads", "1", "--trace", on});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = run({"dump", sample, "--pipeline", "cpu", "-o", dump});
  ASSERT_EQ(r.exitCode, 0) << r.err;

  r = run({"compare", off, on, "--stages", dump + "/stages.json", "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json c = nlohmann::json::parse(r.out);
  int64_t kernelsBefore = c["before"]["kernel_count"];
  int64_t kernelsAfter = c["after"]["kernel_count"];
  EXPECT_EQ(kernelsBefore % 3, 0);
  EXPECT_EQ(kernelsAfter % 3, 0);
  EXPECT_GT(kernelsBefore, kernelsAfter);
  EXPECT_GT(c["before"]["bytes"].get<int64_t>(), 0);
  EXPECT_GT(c["after"]["bytes"].get<int64_t>(), 0);
  EXPECT_EQ(c["before"]["events_with_bytes"], kernelsBefore);
  // Every "after" kernel maps to before kernels: a fusion through stages.json to two or more, the rest by name.
  int fusions = 0;
  int64_t beforeCountMapped = 0;
  ASSERT_EQ(c["mappings"].size(), static_cast<size_t>(kernelsAfter / 3));
  for (const nlohmann::json& m : c["mappings"]) {
    std::string after = m["after"];
    ASSERT_FALSE(m["before"].empty()) << after;
    beforeCountMapped += m["before_count"].get<int64_t>();
    if (after.rfind("fusion", 0) == 0) {
      ++fusions;
      EXPECT_EQ(m["via"], "stages.json") << after;
    } else {
      EXPECT_EQ(m["before"], nlohmann::json::array({after}));
    }
    EXPECT_GT(m["speedup"].get<double>(), 0.0) << after;
  }
  EXPECT_GT(fusions, 0);
  // Each before kernel is replaced by exactly one after kernel, so the mapping covers every unfused launch.
  EXPECT_EQ(beforeCountMapped, kernelsBefore);
  EXPECT_TRUE(c["unmapped_before"].empty()) << c["unmapped_before"].dump();

  r = run({"stats", on, "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  nlohmann::json s = nlohmann::json::parse(r.out);
  EXPECT_EQ(s["kernel_count"], kernelsAfter);
}

}  // namespace
