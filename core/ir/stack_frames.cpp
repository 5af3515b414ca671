#include "core/ir/stack_frames.h"

#include <charconv>
#include <unordered_set>

#include <fmt/format.h>

#include "core/ir/attributes.h"

namespace fusionscope::core {
namespace {

constexpr int kMaxStackDepth = 64;

std::optional<int64_t> parseInt(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// `"text"` with `\"` and `\\` escapes; nullopt if the row is not one quoted string.
std::optional<std::string> unquote(std::string_view text) {
  if (text.size() < 2 || text.front() != '"' || text.back() != '"') return std::nullopt;
  std::string out;
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 2 < text.size()) c = text[++i];
    out += c;
  }
  return out;
}

// The integer value of `key=` in `{a=1 b=2}`; nullopt when absent or not an integer.
std::optional<int64_t> field(std::string_view row, std::string_view key) {
  size_t at = 0;
  while ((at = row.find(key, at)) != std::string_view::npos) {
    bool startsWord = at == 0 || row[at - 1] == '{' || row[at - 1] == ' ';
    size_t value = at + key.size();
    if (startsWord && value < row.size() && row[value] == '=') {
      size_t end = value + 1;
      while (end < row.size() && (row[end] == '-' || (row[end] >= '0' && row[end] <= '9'))) ++end;
      return parseInt(row.substr(value + 1, end - value - 1));
    }
    at = value;
  }
  return std::nullopt;
}

}  // namespace

std::string SourceLocation::toString() const {
  std::string out = file.empty() ? std::string("?") : file;
  if (line > 0) out += fmt::format(":{}", line);
  if (line > 0 && column > 0) out += fmt::format(":{}", column);
  if (!function.empty()) out += fmt::format(" ({})", function);
  return out;
}

StackFrameIndex::StackFrameIndex(const std::vector<HeaderTable>& tables) {
  for (const HeaderTable& table : tables) {
    for (const auto& [id, text] : table.rows) {
      if (table.name == "FileNames" || table.name == "FunctionNames") {
        std::optional<std::string> name = unquote(text);
        if (!name) continue;
        (table.name == "FileNames" ? m_files : m_functions)[id] = std::move(*name);
      } else if (table.name == "FileLocations") {
        Location location;
        location.file = field(text, "file_name_id").value_or(0);
        location.function = field(text, "function_name_id").value_or(0);
        location.line = field(text, "line").value_or(0);
        location.column = field(text, "column").value_or(0);
        m_locations[id] = location;
      } else if (table.name == "StackFrames") {
        std::optional<int64_t> location = field(text, "file_location_id");
        if (!location) continue;
        m_frames[id] = Frame{*location, field(text, "parent_frame_id").value_or(0)};
      }
    }
  }
}

std::optional<SourceLocation> StackFrameIndex::resolveLocation(int64_t id) const {
  auto it = m_locations.find(id);
  if (it == m_locations.end()) return std::nullopt;
  SourceLocation out;
  if (auto file = m_files.find(it->second.file); file != m_files.end()) out.file = file->second;
  if (auto function = m_functions.find(it->second.function); function != m_functions.end())
    out.function = function->second;
  out.line = it->second.line;
  out.column = it->second.column;
  return out;
}

std::vector<SourceLocation> StackFrameIndex::stack(int64_t frameId) const {
  std::vector<SourceLocation> out;
  std::unordered_set<int64_t> seen;
  int64_t id = frameId;
  while (static_cast<int>(out.size()) < kMaxStackDepth && seen.insert(id).second) {
    auto frame = m_frames.find(id);
    if (frame == m_frames.end()) break;
    if (std::optional<SourceLocation> location = resolveLocation(frame->second.location))
      out.push_back(std::move(*location));
    if (frame->second.parent == 0 || frame->second.parent == id) break;
    id = frame->second.parent;
  }
  return out;
}

std::optional<SourceLocation> StackFrameIndex::location(int64_t frameId) const {
  auto frame = m_frames.find(frameId);
  if (frame == m_frames.end()) return std::nullopt;
  return resolveLocation(frame->second.location);
}

std::optional<int64_t> stackFrameId(const OpMetadata& metadata) {
  return field(metadata.extra, "stack_frame_id");
}

}  // namespace fusionscope::core
