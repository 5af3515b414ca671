// The malformed-input files of issue 8, generated in memory: truncated, wrong types, huge numbers, deep nesting,
// cycles, invalid UTF-8, empty, not the format at all. Shared by the CLI suite (tests/app/malformed_input_test.cpp)
// and the viewer's (tests/viewer), which must both reject every one cleanly.
#pragma once

#include <sys/stat.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace fusionscope::testing {

enum class Kind { kHlo, kTrace, kStages, kNpy };

struct MalformedFile {
  std::string name;  // file name; the test name is derived from it
  Kind kind;
  std::function<std::string()> content;  // empty function: the path is a directory, or (name "missing") absent
  bool hasPosition = false;              // the message must carry FILE:LINE:COL
  // With no content: "fifo" makes the path a named pipe nobody writes (a reader that opens it blocks forever),
  // "devzero" a symbolic link to /dev/zero (a reader that reads it to the end fills memory).
  std::string special = {};
};

// Creates `file` under `dir` as the suite describes it and returns its path.
inline std::filesystem::path materializeMalformed(const std::filesystem::path& dir, const MalformedFile& file) {
  const std::filesystem::path path = dir / file.name;
  if (file.name.rfind("missing", 0) == 0) return path;
  if (file.special == "fifo") {
    ::mkfifo(path.c_str(), 0600);
    return path;
  }
  if (file.special == "devzero") {
    std::filesystem::create_symlink("/dev/zero", path);
    return path;
  }
  if (!file.content) {
    std::filesystem::create_directories(path);
    return path;
  }
  std::ofstream(path, std::ios::binary) << file.content();
  return path;
}

inline std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

inline constexpr const char* kGoodHlo = R"hlo(HloModule good

ENTRY main {
  p = f32[2,3] parameter(0)
  e = f32[2,3] exponential(p)
  ROOT n = f32[2,3] negate(e)
}
)hlo";

inline std::string hloWithBody(const std::string& body) {
  return "HloModule m\n\nENTRY main {\n" + body + "\n}\n";
}

inline const std::string kGoodTrace =
    R"({"traceEvents":[{"ph":"X","name":"k","pid":1,"tid":1,"ts":1,"dur":2,"cat":"kernel"}]})";

// A real gzip stream (zlib, gzip header) of `text`.
inline std::string gzipped(const std::string& text) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline std::vector<MalformedFile> malformedFiles() {
  std::vector<MalformedFile> files;
  auto hlo = [&](std::string name, std::string text, bool position = true) {
    files.push_back({std::move(name), Kind::kHlo, [text] { return text; }, position});
  };
  // ---- HLO text ----
  hlo("empty.hlo", "", false);
  hlo("whitespace_only.hlo", "\n\n   \t\n", false);
  hlo("truncated_mid_instruction.hlo", std::string(kGoodHlo).substr(0, 70));
  hlo("truncated_mid_shape.hlo", "HloModule m\nENTRY main {\n  p = f32[2,");
  hlo("unterminated_computation.hlo", "HloModule m\nENTRY main {\n  ROOT p = f32[2] parameter(0)\n");
  hlo("no_entry.hlo", "HloModule m\n\ncomp {\n  ROOT p = f32[2] parameter(0)\n}\n");
  hlo("two_entries.hlo",
      "HloModule m\nENTRY a {\n  ROOT p = f32[] parameter(0)\n}\nENTRY b {\n  ROOT q = f32[] parameter(0)\n}\n");
  hlo("huge_dimension.hlo", hloWithBody("  ROOT p = f32[99999999999999999999999] parameter(0)"));
  hlo("element_count_overflow.hlo", hloWithBody("  ROOT p = f32[4294967296,4294967296,4294967296] parameter(0)"));
  hlo("negative_dimension.hlo", hloWithBody("  ROOT p = f32[-4] parameter(0)"));
  hlo("unknown_element_type.hlo", hloWithBody("  ROOT p = f33[4] parameter(0)"));
  hlo("mismatched_operand_types.hlo",
      hloWithBody("  p = f32[4] parameter(0)\n  q = s32[4] parameter(1)\n  ROOT r = f32[4] add(p, q)"));
  hlo("mismatched_shapes.hlo",
      hloWithBody("  p = f32[2] parameter(0)\n  q = f32[3] parameter(1)\n  ROOT r = f32[2] add(p, q)"));
  hlo("cycle.hlo",
      hloWithBody("  p = f32[2] parameter(0)\n  a = f32[2] add(p, b)\n  b = f32[2] add(a, p)\n  ROOT r = f32[2] "
                  "negate(b)"));
  hlo("self_use.hlo", hloWithBody("  ROOT a = f32[2] negate(a)"));
  hlo("undefined_operand.hlo", hloWithBody("  ROOT r = f32[2] negate(nowhere)"));
  hlo("duplicate_name.hlo",
      hloWithBody("  p = f32[2] parameter(0)\n  p = f32[2] negate(p)\n  ROOT r = f32[2] negate(p)"));
  hlo("undefined_called_computation.hlo",
      hloWithBody("  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[] reduce(p, z), "
                  "dimensions={0}, to_apply=nope"));
  hlo("recursive_call.hlo",
      "HloModule m\n\nf {\n  a = f32[] parameter(0)\n  ROOT c = f32[] call(a), to_apply=f\n}\n\nENTRY main {\n  p = "
      "f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=f\n}\n",
      false);
  hlo("wrong_operand_count.hlo", hloWithBody("  ROOT r = f32[2] negate()"));
  hlo("duplicate_parameter_number.hlo",
      hloWithBody("  p = f32[2] parameter(0)\n  q = f32[2] parameter(0)\n  ROOT r = f32[2] add(p, q)"));
  hlo("tuple_index_out_of_range.hlo",
      hloWithBody("  p = (f32[2], f32[3]) parameter(0)\n  ROOT g = f32[2] get-tuple-element(p), index=7"));
  hlo("bad_attribute_value.hlo",
      hloWithBody("  p = f32[2,3] parameter(0)\n  ROOT t = f32[3,2] transpose(p), dimensions={a,b}"));
  hlo("layout_out_of_range.hlo", hloWithBody("  ROOT p = f32[2,3]{5,0} parameter(0)"));
  hlo("integer_constant_out_of_range.hlo", hloWithBody("  ROOT c = s8[] constant(100000)"));
  hlo("float_constant_overflow.hlo", hloWithBody("  ROOT c = f32[] constant(1e99999)"));
  hlo("constant_too_few_elements.hlo", hloWithBody("  ROOT c = f32[3] constant({1, 2})"));
  hlo("unterminated_string.hlo", hloWithBody("  ROOT p = f32[2] parameter(0), metadata={op_name=\"abc"));
  hlo("unterminated_comment.hlo", "HloModule m\n/* the rest is a comment\nENTRY main {\n}\n");
  hlo("invalid_utf8.hlo", hloWithBody("  ROOT p\xff\xfe = f32[2] parameter(0)"));
  hlo("nul_bytes.hlo", std::string("HloModule m\n\nENTRY main {\n  ROOT p = f32[2] par\0ameter(0)\n}\n", 52));
  hlo("deep_tuple_nesting.hlo",
      hloWithBody("  ROOT p = " + repeat("(", 100000) + "f32[]" + repeat(")", 100000) + " parameter(0)"));
  hlo("deep_literal_nesting.hlo",
      hloWithBody("  ROOT c = f32[1] constant(" + repeat("{", 100000) + "1" + repeat("}", 100000) + ")"));
  // Modules the verifier must refuse because running them would read or write out of bounds.
  hlo("copy_larger_than_operand.hlo", hloWithBody("  p = f32[1] parameter(0)\n  ROOT c = f32[100000000] copy(p)"));
  hlo("reverse_larger_than_operand.hlo",
      hloWithBody("  p = f32[4] parameter(0)\n  ROOT r = f32[4000000] reverse(p), dimensions={0}"));
  hlo("reduce_result_type.hlo",
      "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
      "ENTRY e {\n  p = f32[16,8] parameter(0)\n  z = f32[] constant(0)\n"
      "  ROOT r = pred[16] reduce(p, z), dimensions={1}, to_apply=add\n}\n");
  hlo("scatter_result_shape.hlo",
      "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
      "ENTRY e {\n  p = f32[8] parameter(0)\n  i = s32[2,1] parameter(1)\n  u = f32[2] parameter(2)\n"
      "  ROOT s = f32[1000000] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n");
  hlo("pad_result_shape.hlo",
      hloWithBody("  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[400] pad(p, z), padding=1_1"));
  hlo("dynamic_slice_sizes.hlo",
      hloWithBody("  p = f32[4] parameter(0)\n  i = s32[] parameter(1)\n"
                  "  ROOT r = f32[40] dynamic-slice(p, i), dynamic_slice_sizes={40}"));
  hlo("huge_parameter_number_in_callee.hlo",
      "HloModule m\nf {\n  ROOT p = f32[] parameter(99999999999)\n}\n"
      "ENTRY e {\n  x = f32[] parameter(0)\n  ROOT c = f32[] call(x), to_apply=f\n}\n");
  hlo("entry_layout_mismatch.hlo",
      "HloModule m, entry_computation_layout={(f32[3]{0})->f32[4]{0}}\n"
      "ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT c = f32[4] negate(p)\n}\n");
  hlo("signed_dimension.hlo", hloWithBody("  ROOT p = f32[-0] parameter(0)"));
  hlo("while_state_mismatch.hlo",
      "HloModule m\ncond {\n  s = f32[2] parameter(0)\n  ROOT t = pred[] constant(false)\n}\n"
      "body {\n  s = f32[2] parameter(0)\n  o = f32[] constant(1)\n"
      "  ROOT b = f32[2000000] broadcast(o), dimensions={}\n}\n"
      "ENTRY e {\n  x = f32[2] parameter(0)\n  ROOT w = f32[2] while(x), condition=cond, body=body\n}\n");
  hlo("long_duplicate_name.hlo", hloWithBody("  " + repeat("y", 86000) + " = f32[4] parameter(0)\n  " + repeat("y", 86000) +
                                              " = f32[4] negate(p)"));
  hlo("long_unknown_operand.hlo", hloWithBody("  ROOT c = f32[4] negate(x" + repeat("9", 50000) + ")"));
  hlo("json_instead_of_hlo.hlo", kGoodTrace);
  hlo(
      "binary_garbage.hlo",
      [] {
        std::string s;
        uint32_t x = 2463534242u;
        for (int i = 0; i < 4096; ++i) {
          x ^= x << 13, x ^= x >> 17, x ^= x << 5;
          s += static_cast<char>(x & 0xff);
        }
        return s;
      }(),
      false);
  files.push_back({"directory.hlo", Kind::kHlo, nullptr, false});
  files.push_back({"fifo.hlo", Kind::kHlo, nullptr, false, "fifo"});
  files.push_back({"devzero.hlo", Kind::kHlo, nullptr, false, "devzero"});
  files.push_back({"missing.hlo", Kind::kHlo, nullptr, false});

  // ---- Chrome trace JSON (file-level corruption; a single bad event is counted and skipped instead) ----
  auto trace = [&](std::string name, std::string text) {
    files.push_back({std::move(name), Kind::kTrace, [text] { return text; }, false});
  };
  trace("empty.json", "");
  trace("hlo_instead_of_json.json", kGoodHlo);
  trace("truncated_array.json", R"([{"ph":"X","name":"k","pid":1,"tid":1,"ts":1,"dur":2},{"ph":"X","na)");
  trace("truncated_object.json", kGoodTrace.substr(0, kGoodTrace.size() - 7));
  trace("trace_events_not_array.json", R"({"traceEvents": 5})");
  trace("top_level_string.json", R"("traceEvents")");
  trace("top_level_number.json", "1e999");
  trace("no_trace_events.json", R"({"displayTimeUnit":"ns","otherData":{}})");
  trace("deep_nesting.json", repeat("[", 100000) + repeat("]", 100000));
  trace("unquoted_key.json", R"({traceEvents:[]})");
  trace("invalid_utf8.json", "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"\xff\xfe\",\"pid\":1,\"tid\":1,\"ts\":1}]}");
  trace("nul_bytes.json", std::string("{\"traceEvents\":[\0]}", 19));
  trace("trailing_garbage.json", kGoodTrace + " }{ ");
  trace("gzip_of_not_json.json.gz", gzipped(kGoodHlo));
  trace("truncated_gzip.json.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\x56", 12));
  files.push_back({"directory.json", Kind::kTrace, nullptr, false});
  files.push_back({"fifo.json", Kind::kTrace, nullptr, false, "fifo"});
  files.push_back({"devzero.json", Kind::kTrace, nullptr, false, "devzero"});
  files.push_back({"missing.json", Kind::kTrace, nullptr, false});

  // ---- stages.json (read by `compare --stages`) ----
  auto stages = [&](std::string name, std::string text) {
    files.push_back({std::move(name), Kind::kStages, [text] { return text; }, false});
  };
  files.push_back({"stages_fifo.json", Kind::kStages, nullptr, false, "fifo"});
  stages("stages_empty.json", "");
  stages("stages_not_json.json", "stages: [1, 2]");
  stages("stages_no_stages.json", R"({"schema":"fusionscope.stages/1"})");
  stages("stages_wrong_type.json", R"({"schema":"fusionscope.stages/1","stages":{"0":1}})");
  stages("stages_truncated.json", R"({"schema":"fusionscope.stages/1","stages":[{"index":0,"fusion_list":[{"na)");
  stages("stages_deep_nesting.json", R"({"stages":)" + repeat("[", 100000) + repeat("]", 100000) + "}");

  // ---- .npy inputs (read by `run --input NAME=FILE`) ----
  auto npy = [&](std::string name, std::string text) {
    files.push_back({std::move(name), Kind::kNpy, [text] { return text; }, false});
  };
  auto npyHeader = [](const std::string& dict) {
    std::string header = dict;
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out = std::string("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header;
  };
  files.push_back({"fifo.npy", Kind::kNpy, nullptr, false, "fifo"});
  files.push_back({"devzero.npy", Kind::kNpy, nullptr, false, "devzero"});
  npy("empty.npy", "");
  npy("bad_magic.npy", "NOTNUMPY" + std::string(120, ' '));
  npy("truncated_header.npy", npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }").substr(0, 30));
  npy("wrong_dtype.npy", npyHeader("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }") + std::string(48, 0));
  npy("wrong_shape.npy",
      npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2, 1), }") + std::string(24, 0));
  npy("truncated_data.npy",
      npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") + std::string(10, 0));
  npy("huge_shape.npy", npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 3), }"));
  return files;
}

}  // namespace fusionscope::testing
