#include "profiler/gpu/bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace fusionscope::profiler::gpu {
namespace {

using nlohmann::json;

// A readable error at a JSON path, e.g. "kernels[2].grid".
struct Invalid {
  std::string where;
  std::string what;
};

const json& field(const json& object, const char* key, const std::string& where) {
  if (!object.is_object()) throw Invalid{where, "expected an object"};
  auto it = object.find(key);
  if (it == object.end()) throw Invalid{where, std::string("missing \"") + key + "\""};
  return *it;
}

int64_t integer(const json& value, const std::string& where) {
  if (!value.is_number_integer()) throw Invalid{where, "expected an integer"};
  return value.get<int64_t>();
}

std::string text(const json& value, const std::string& where) {
  if (!value.is_string()) throw Invalid{where, "expected a string"};
  return value.get<std::string>();
}

std::array<uint32_t, 3> shape3(const json& value, const std::string& where) {
  if (!value.is_array() || value.size() != 3) throw Invalid{where, "expected three positive integers"};
  std::array<uint32_t, 3> out{};
  for (size_t i = 0; i < 3; ++i) {
    int64_t v = integer(value[i], where + "[" + std::to_string(i) + "]");
    if (v <= 0 || v > INT32_MAX) throw Invalid{where + "[" + std::to_string(i) + "]", "must be positive"};
    out[i] = static_cast<uint32_t>(v);
  }
  return out;
}

// The most bytes one buffer, value or the whole bundle may hold (64 GiB: a fifth of an H200's memory to spare for
// the host copies the runner makes). A bundle past it is refused before anything is allocated.
constexpr int64_t kMaxBundleBytes = int64_t{1} << 36;

BundleValue value(const json& v, const std::string& where, bool output) {
  BundleValue out;
  out.index = integer(field(v, "index", where), where + ".index");
  out.name = text(field(v, "name", where), where + ".name");
  out.dtype = text(field(v, "dtype", where), where + ".dtype");
  if (dtypeBytes(out.dtype) == 0) throw Invalid{where + ".dtype", "unknown dtype \"" + out.dtype + "\""};
  const json& dims = field(v, "dims", where);
  if (!dims.is_array()) throw Invalid{where + ".dims", "expected an array"};
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = integer(dims[i], where + ".dims[" + std::to_string(i) + "]");
    if (d < 0) throw Invalid{where + ".dims[" + std::to_string(i) + "]", "negative dimension"};
    out.dims.push_back(d);
  }
  // The product is checked as it grows: 3e9 x 3e9 must be refused here, not wrap and allocate later.
  int64_t elements = 1;
  for (int64_t d : out.dims) {
    if (d != 0 && elements > kMaxBundleBytes / d) {
      throw Invalid{where + ".dims", "more than " + std::to_string(kMaxBundleBytes) + " elements"};
    }
    elements *= d;
  }
  if (elements > kMaxBundleBytes / dtypeBytes(out.dtype)) {
    throw Invalid{where + ".dims", "more than " + std::to_string(kMaxBundleBytes) + " bytes"};
  }
  out.buffer = integer(field(v, "buffer", where), where + ".buffer");
  if (output && v.contains("aliases_parameter")) {
    out.aliasesParameter = integer(v["aliases_parameter"], where + ".aliases_parameter");
  }
  return out;
}

constexpr int kMaxProgramDepth = 64;  // nested loops and branches; deeper is refused, not recursed into

std::vector<BundleMove> moves(const json& list, const Bundle& b, const std::string& where) {
  if (!list.is_array()) throw Invalid{where, "expected an array"};
  std::vector<BundleMove> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    BundleMove move;
    move.from = integer(field(list[i], "from", at), at + ".from");
    move.to = integer(field(list[i], "to", at), at + ".to");
    if (!b.buffer(move.from)) throw Invalid{at + ".from", "unknown buffer " + std::to_string(move.from)};
    if (!b.buffer(move.to)) throw Invalid{at + ".to", "unknown buffer " + std::to_string(move.to)};
    if (list[i].contains("swap")) {
      if (!list[i]["swap"].is_boolean()) throw Invalid{at + ".swap", "expected true or false"};
      move.swap = list[i]["swap"].get<bool>();
    }
    out.push_back(move);
  }
  return out;
}

int64_t bufferId(const json& value, const Bundle& b, const std::string& where) {
  const int64_t id = integer(value, where);
  if (!b.buffer(id)) throw Invalid{where, "unknown buffer " + std::to_string(id)};
  return id;
}

std::vector<BundleStep> program(const json& list, const Bundle& b, const std::string& where, int depth) {
  if (depth > kMaxProgramDepth) throw Invalid{where, "nested deeper than " + std::to_string(kMaxProgramDepth)};
  if (!list.is_array()) throw Invalid{where, "expected an array"};
  std::vector<BundleStep> steps;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const json& s = list[i];
    if (!s.is_object()) throw Invalid{at, "expected an object"};
    BundleStep step;
    if (s.contains("kernel")) {
      step.kernel = integer(s["kernel"], at + ".kernel");
      if (step.kernel < 0 || step.kernel >= static_cast<int64_t>(b.kernels.size())) {
        throw Invalid{at + ".kernel", "no kernel " + std::to_string(step.kernel) + " (the bundle has " +
                                          std::to_string(b.kernels.size()) + ")"};
      }
    } else if (s.contains("while")) {
      step.kind = BundleStep::Kind::kWhile;
      step.instruction = text(s["while"], at + ".while");
      step.init = moves(field(s, "init", at), b, at + ".init");
      step.condition = program(field(s, "condition", at), b, at + ".condition", depth + 1);
      step.predicate = bufferId(field(s, "predicate", at), b, at + ".predicate");
      step.body = program(field(s, "body", at), b, at + ".body", depth + 1);
      step.update = moves(field(s, "update", at), b, at + ".update");
    } else if (s.contains("conditional")) {
      step.kind = BundleStep::Kind::kConditional;
      step.instruction = text(s["conditional"], at + ".conditional");
      step.selector = bufferId(field(s, "selector", at), b, at + ".selector");
      step.selectorDtype = text(field(s, "selector_dtype", at), at + ".selector_dtype");
      if (step.selectorDtype != "pred" && step.selectorDtype[0] != 's' && step.selectorDtype[0] != 'u') {
        throw Invalid{at + ".selector_dtype", "expected pred or an integer type, got \"" + step.selectorDtype + "\""};
      }
      if (dtypeBytes(step.selectorDtype) == 0) {
        throw Invalid{at + ".selector_dtype", "unknown dtype \"" + step.selectorDtype + "\""};
      }
      const json& branches = field(s, "branches", at);
      const json& results = field(s, "branch_results", at);
      if (!branches.is_array() || branches.empty()) throw Invalid{at + ".branches", "expected a non-empty array"};
      if (!results.is_array() || results.size() != branches.size()) {
        throw Invalid{at + ".branch_results", "expected one list of moves per branch"};
      }
      if (step.selectorDtype == "pred" && branches.size() != 2) {
        throw Invalid{at + ".branches", "a pred selector needs two branches"};
      }
      for (size_t k = 0; k < branches.size(); ++k) {
        const std::string branch = at + ".branches[" + std::to_string(k) + "]";
        step.branches.push_back(program(branches[k], b, branch, depth + 1));
        step.branchResults.push_back(moves(results[k], b, at + ".branch_results[" + std::to_string(k) + "]"));
      }
    } else {
      throw Invalid{at, "expected \"kernel\", \"while\" or \"conditional\""};
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

Bundle parse(const json& root) {
  Bundle b;
  std::string schema = text(field(root, "schema", "bundle"), "schema");
  if (schema != kBundleSchema)
    throw Invalid{"schema", "expected \"" + std::string(kBundleSchema) + "\", got \"" + schema + "\""};
  b.module = text(field(root, "module", "bundle"), "module");
  if (root.contains("fusion")) b.fusion = root["fusion"].is_boolean() && root["fusion"].get<bool>();
  const json& target = field(root, "target", "bundle");
  b.triple = text(field(target, "triple", "target"), "target.triple");
  b.sm = integer(field(target, "sm", "target"), "target.sm");
  b.ptxFile = text(field(target, "ptx", "target"), "target.ptx");
  if (root.contains("constants") && !root["constants"].is_null())
    b.constantsFile = text(root["constants"], "constants");
  if (root.contains("peak_bytes")) b.peakBytes = integer(root["peak_bytes"], "peak_bytes");

  const json& buffers = field(root, "buffers", "bundle");
  if (!buffers.is_array()) throw Invalid{"buffers", "expected an array"};
  std::set<int64_t> ids;
  int64_t totalBytes = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    std::string where = "buffers[" + std::to_string(i) + "]";
    BundleBuffer buffer;
    buffer.id = integer(field(buffers[i], "id", where), where + ".id");
    buffer.bytes = integer(field(buffers[i], "bytes", where), where + ".bytes");
    if (buffer.bytes <= 0) throw Invalid{where + ".bytes", "must be positive"};
    if (buffer.bytes > kMaxBundleBytes - totalBytes) {
      throw Invalid{where + ".bytes", "the buffers hold more than " + std::to_string(kMaxBundleBytes) +
                                          " bytes in all (the runner's limit)"};
    }
    totalBytes += buffer.bytes;
    if (buffers[i].contains("constant_offset")) {
      buffer.constantOffset = integer(buffers[i]["constant_offset"], where + ".constant_offset");
      if (*buffer.constantOffset < 0) throw Invalid{where + ".constant_offset", "negative offset"};
      if (b.constantsFile.empty())
        throw Invalid{where + ".constant_offset", "a constant buffer but no \"constants\" file"};
    }
    if (!ids.insert(buffer.id).second) throw Invalid{where + ".id", "duplicate buffer id " + std::to_string(buffer.id)};
    b.buffers.push_back(buffer);
  }
  auto checkValue = [&](const BundleValue& v, const std::string& where) {
    const BundleBuffer* buffer = b.buffer(v.buffer);
    if (!buffer) throw Invalid{where + ".buffer", "unknown buffer " + std::to_string(v.buffer)};
    int64_t bytes = v.elements() * dtypeBytes(v.dtype);
    if (bytes > buffer->bytes) {
      throw Invalid{where, std::to_string(bytes) + " bytes do not fit buffer " + std::to_string(v.buffer) + " (" +
                               std::to_string(buffer->bytes) + " bytes)"};
    }
  };
  const json& parameters = field(root, "parameters", "bundle");
  if (!parameters.is_array()) throw Invalid{"parameters", "expected an array"};
  for (size_t i = 0; i < parameters.size(); ++i) {
    std::string where = "parameters[" + std::to_string(i) + "]";
    b.parameters.push_back(value(parameters[i], where, false));
    checkValue(b.parameters.back(), where);
  }
  const json& outputs = field(root, "outputs", "bundle");
  if (!outputs.is_array()) throw Invalid{"outputs", "expected an array"};
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string where = "outputs[" + std::to_string(i) + "]";
    b.outputs.push_back(value(outputs[i], where, true));
    checkValue(b.outputs.back(), where);
    if (auto alias = b.outputs.back().aliasesParameter) {
      bool found = false;
      for (const BundleValue& p : b.parameters) found = found || p.index == *alias;
      if (!found) throw Invalid{where + ".aliases_parameter", "no parameter with index " + std::to_string(*alias)};
    }
  }
  const json& kernels = field(root, "kernels", "bundle");
  if (!kernels.is_array()) throw Invalid{"kernels", "expected an array"};
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::string where = "kernels[" + std::to_string(i) + "]";
    const json& k = kernels[i];
    BundleKernel kernel;
    kernel.name = text(field(k, "name", where), where + ".name");
    if (k.contains("instruction")) kernel.instruction = text(k["instruction"], where + ".instruction");
    if (k.contains("kind")) kernel.kind = text(k["kind"], where + ".kind");
    kernel.grid = shape3(field(k, "grid", where), where + ".grid");
    kernel.block = shape3(field(k, "block", where), where + ".block");
    if (k.contains("shared_bytes")) {
      int64_t shared = integer(k["shared_bytes"], where + ".shared_bytes");
      if (shared < 0) throw Invalid{where + ".shared_bytes", "negative"};
      kernel.sharedBytes = static_cast<uint32_t>(shared);
    }
    const json& args = field(k, "args", where);
    if (!args.is_array()) throw Invalid{where + ".args", "expected an array"};
    for (size_t a = 0; a < args.size(); ++a) {
      int64_t id = integer(args[a], where + ".args[" + std::to_string(a) + "]");
      if (!b.buffer(id))
        throw Invalid{where + ".args[" + std::to_string(a) + "]", "unknown buffer " + std::to_string(id)};
      kernel.args.push_back(id);
    }
    if (k.contains("bytes_read")) kernel.bytesRead = integer(k["bytes_read"], where + ".bytes_read");
    if (k.contains("bytes_written")) kernel.bytesWritten = integer(k["bytes_written"], where + ".bytes_written");
    if (k.contains("elements")) kernel.elements = integer(k["elements"], where + ".elements");
    b.kernels.push_back(std::move(kernel));
  }
  if (root.contains("program")) b.program = program(root["program"], b, "program", 0);
  return b;
}

Status moveAll(const Bundle& bundle, ProgramDevice& device, const std::vector<BundleMove>& list) {
  for (const BundleMove& move : list) {
    if (move.swap) {
      device.swap(move.from, move.to);
    } else {
      // Both buffers hold the same shape; the smaller size is the value's (a reused buffer may be larger).
      const int64_t bytes = std::min(bundle.buffer(move.from)->bytes, bundle.buffer(move.to)->bytes);
      FS_RETURN_IF_ERROR(device.copy(move.from, move.to, bytes));
    }
  }
  return okStatus();
}

Status runSteps(const Bundle& bundle, const std::vector<BundleStep>& steps, ProgramDevice& device,
                const volatile int* interrupt, int64_t& launches) {
  for (const BundleStep& step : steps) {
    switch (step.kind) {
      case BundleStep::Kind::kKernel:
        FS_RETURN_IF_ERROR(device.launch(step.kernel));
        ++launches;
        break;
      case BundleStep::Kind::kWhile: {
        FS_RETURN_IF_ERROR(moveAll(bundle, device, step.init));
        for (int64_t trip = 0;; ++trip) {
          FS_RETURN_IF_ERROR(runSteps(bundle, step.condition, device, interrupt, launches));
          uint8_t predicate = 0;
          FS_RETURN_IF_ERROR(device.read(step.predicate, &predicate, 1));
          if (predicate == 0) break;
          if (interrupt != nullptr && *interrupt != 0) {
            return Status::error(step.instruction + ": interrupted after " + std::to_string(trip) + " trips");
          }
          FS_RETURN_IF_ERROR(runSteps(bundle, step.body, device, interrupt, launches));
          FS_RETURN_IF_ERROR(moveAll(bundle, device, step.update));
        }
        break;
      }
      case BundleStep::Kind::kConditional: {
        uint8_t selector[8] = {};
        FS_RETURN_IF_ERROR(device.read(step.selector, selector, dtypeBytes(step.selectorDtype)));
        const int64_t index = branchIndex(selector, step.selectorDtype, static_cast<int64_t>(step.branches.size()));
        FS_RETURN_IF_ERROR(runSteps(bundle, step.branches[static_cast<size_t>(index)], device, interrupt, launches));
        FS_RETURN_IF_ERROR(moveAll(bundle, device, step.branchResults[static_cast<size_t>(index)]));
        break;
      }
    }
  }
  return okStatus();
}

}  // namespace

int64_t BundleValue::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

const BundleBuffer* Bundle::buffer(int64_t id) const {
  for (const BundleBuffer& b : buffers) {
    if (b.id == id) return &b;
  }
  return nullptr;
}

int64_t branchIndex(const uint8_t* data, const std::string& dtype, int64_t branches) {
  if (dtype == "pred") return data[0] != 0 ? 0 : 1;
  const int64_t size = dtypeBytes(dtype);
  uint64_t bits = 0;
  std::memcpy(&bits, data, static_cast<size_t>(size));  // little-endian: the low bytes
  int64_t index = -1;
  if (dtype[0] == 'u') {
    index = bits >= static_cast<uint64_t>(branches) ? -1 : static_cast<int64_t>(bits);
  } else {
    const int shift = 64 - static_cast<int>(size) * 8;  // sign-extend
    index = static_cast<int64_t>(bits << shift) >> shift;
  }
  return index < 0 || index >= branches ? branches - 1 : index;
}

Status runProgram(const Bundle& bundle, ProgramDevice& device, const volatile int* interrupt, int64_t* launches) {
  int64_t count = 0;
  Status status = okStatus();
  if (bundle.program.empty()) {
    for (size_t k = 0; k < bundle.kernels.size() && status.ok(); ++k) {
      status = device.launch(static_cast<int64_t>(k));
      if (status.ok()) ++count;
    }
  } else {
    status = runSteps(bundle, bundle.program, device, interrupt, count);
  }
  if (launches != nullptr) *launches += count;
  return status;
}

int64_t dtypeBytes(const std::string& dtype) {
  static const std::map<std::string, int64_t> kSizes = {
      {"f32", 4}, {"f64", 8}, {"f16", 2}, {"bf16", 2}, {"s8", 1},  {"s16", 2},  {"s32", 4},
      {"s64", 8}, {"u8", 1},  {"u16", 2}, {"u32", 4},  {"u64", 8}, {"pred", 1},
  };
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

StatusOr<Bundle> parseBundle(const std::string& text, const std::string& name) {
  json root = json::parse(text, nullptr, false);
  if (root.is_discarded()) {
    // Parse again with exceptions for the position nlohmann reports.
    try {
      json again = json::parse(text);
      (void)again;
    } catch (const json::parse_error& e) {
      return Status::error(name + ": error: not valid JSON (at byte offset " + std::to_string(e.byte) +
                           "): " + e.what());
    } catch (const json::exception& e) {  // e.g. out_of_range: a number too large for any JSON number type
      return Status::error(name + ": error: not valid JSON: " + e.what());
    }
    return Status::error(name + ": error: not valid JSON");
  }
  try {
    return parse(root);
  } catch (const Invalid& invalid) {
    return Status::error(name + ": error: " + invalid.where + ": " + invalid.what);
  }
}

StatusOr<std::string> readRegularFile(const std::string& path, int64_t maxBytes) {
  // O_NONBLOCK: a FIFO with no writer must not hang the open; the type is checked on the descriptor.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::error(path + ": error: cannot read: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return Status::error(path + ": error: cannot read: not a regular file (a FIFO, device or directory)");
  }
  if (info.st_size > maxBytes) {
    ::close(fd);
    return Status::error(path + ": error: cannot read: " + std::to_string(info.st_size) + " bytes, more than the " +
                         std::to_string(maxBytes) + " this file may have");
  }
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  size_t used = 0;
  while (used < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + used, bytes.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  if (used != bytes.size()) return Status::error(path + ": error: cannot read: the file changed while being read");
  return bytes;
}

StatusOr<Bundle> loadBundle(const std::string& directory) {
  namespace fs = std::filesystem;
  fs::path dir(directory);
  fs::path path = dir / "bundle.json";
  StatusOr<std::string> text = readRegularFile(path.string(), int64_t{1} << 28);
  if (!text.ok()) return text.status();
  StatusOr<Bundle> bundle = parseBundle(*text, path.string());
  if (!bundle.ok()) return bundle;
  bundle->directory = directory;
  std::error_code error;
  if (!fs::is_regular_file(dir / bundle->ptxFile, error)) {
    return Status::error(path.string() + ": error: target.ptx: " + (dir / bundle->ptxFile).string() + " not found");
  }
  if (!bundle->constantsFile.empty()) {
    fs::path constants = dir / bundle->constantsFile;
    if (!fs::is_regular_file(constants, error)) {
      return Status::error(path.string() + ": error: constants: " + constants.string() + " not found");
    }
    auto size = static_cast<int64_t>(fs::file_size(constants, error));
    for (const BundleBuffer& b : bundle->buffers) {
      if (b.constantOffset && *b.constantOffset > size - b.bytes) {  // no overflow: both are checked positive
        return Status::error(path.string() + ": error: buffer " + std::to_string(b.id) + ": constant bytes [" +
                             std::to_string(*b.constantOffset) + ", " + std::to_string(*b.constantOffset + b.bytes) +
                             ") lie outside " + constants.string() + " (" + std::to_string(size) + " bytes)");
      }
    }
  }
  return bundle;
}

}  // namespace fusionscope::profiler::gpu
