#include "profiler/trace/event_args.h"

#include <simdjson.h>

#include <map>
#include <stdexcept>

namespace fusionscope::profiler {
namespace {

namespace od = simdjson::ondemand;

// The args as a whole, validated object (the DOM parser checks everything, as a reader that rejects malformed args
// must; the importer only skipped over them). False for anything that is not a JSON object.
bool parseObject(std::string_view args, simdjson::dom::object& object) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  return parser.parse(simdjson::padded_string(args)).get(root) == simdjson::SUCCESS &&
         root.get_object().get(object) == simdjson::SUCCESS;
}

}  // namespace

std::optional<std::string> argString(std::string_view args, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\"";
  const size_t at = args.find(quoted);
  if (at == std::string_view::npos) return std::nullopt;
  // Args are small flat objects, so the usual `"key":"value"` is read in place (a GPU trace has one per kernel, up
  // to millions); anything less plain (escapes, nesting, the key twice, the key as a value) goes through the parser.
  auto skipSpace = [&](size_t p) {
    while (p < args.size() && (args[p] == ' ' || args[p] == '\t' || args[p] == '\n' || args[p] == '\r')) ++p;
    return p;
  };
  size_t p = skipSpace(at + quoted.size());
  if (p < args.size() && args[p] == ':') {
    p = skipSpace(p + 1);
    const bool plain = args.find(quoted, at + 1) == std::string_view::npos &&
                       args.find('\\') == std::string_view::npos && args.find('{', 1) == std::string_view::npos;
    if (plain && p < args.size() && args[p] == '"') {
      const size_t close = args.find('"', p + 1);
      if (close != std::string_view::npos) return std::string(args.substr(p + 1, close - p - 1));
    }
  }
  simdjson::dom::object object;
  if (!parseObject(args, object)) return std::nullopt;
  std::optional<std::string> value;
  for (simdjson::dom::key_value_pair field : object) {
    if (field.key != key) continue;
    std::string_view text;
    if (field.value.get_string().get(text) == simdjson::SUCCESS) {
      value = std::string(text);
    } else {
      value.reset();
    }
  }
  return value;
}

int64_t argsBytes(std::string_view args) {
  if (args.empty() || args.find("bytes") == std::string_view::npos) return 0;
  simdjson::padded_string padded(args);
  thread_local od::parser parser;
  od::document doc;
  od::object object;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS || doc.get_object().get(object) != simdjson::SUCCESS) {
    return 0;
  }
  int64_t bytes = 0;
  int64_t readWritten = 0;
  bool haveBytes = false;
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return 0;
    // "bytes read"/"bytes written" is how `fusionscope-cli run --trace` spells them (Kineto-style, with spaces).
    bool readOrWritten = key == "bytes_read" || key == "bytes_written" || key == "bytes read" || key == "bytes written";
    if (key != "bytes" && !readOrWritten) continue;
    double value = 0;
    if (field.value().get_double().get(value) != simdjson::SUCCESS || value < 0) continue;
    if (key == "bytes") {
      bytes = static_cast<int64_t>(value);
      haveBytes = true;
    } else {
      readWritten += static_cast<int64_t>(value);
    }
  }
  return haveBytes ? bytes : readWritten;
}

std::vector<std::pair<std::string, double>> counterValues(std::string_view args) {
  std::vector<std::pair<std::string, double>> values;
  simdjson::dom::object object;
  if (!parseObject(args, object)) return values;
  std::map<std::string_view, simdjson::dom::element> last;  // by key, in byte order
  for (simdjson::dom::key_value_pair field : object) last.insert_or_assign(field.key, field.value);
  for (const auto& [key, value] : last) {
    double number = 0;
    std::string_view text;
    if (value.is_number()) {
      if (value.get_double().get(number) != simdjson::SUCCESS) continue;
    } else if (value.get_string().get(text) == simdjson::SUCCESS) {
      try {
        number = std::stod(std::string(text));
      } catch (const std::logic_error&) {
        continue;  // std::invalid_argument or std::out_of_range: not a number to draw
      }
    } else {
      continue;
    }
    values.emplace_back(std::string(key), number);
  }
  return values;
}

}  // namespace fusionscope::profiler
