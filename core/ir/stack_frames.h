#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fusionscope::core {

struct OpMetadata;

// One block of rows printed between the `HloModule` line and the first computation, as current XLA prints
// its stack-frame index:
//
//   FileNames
//   1 "/path/train.py"
//
//   FileLocations
//   1 {file_name_id=1 function_name_id=1 line=45 end_line=45 column=4 end_column=10}
//
// Rows are kept verbatim (id, then the rest of the line) so the module prints back as it was read, whatever
// the block; the four blocks XLA prints today are also understood (StackFrameIndex).
struct HeaderTable {
  std::string name;
  std::vector<std::pair<int64_t, std::string>> rows;
  bool operator==(const HeaderTable&) const = default;
};

// Where an instruction came from in the user's program.
struct SourceLocation {
  std::string file;
  std::string function;
  int64_t line = 0;
  int64_t column = 0;
  // `file:line[:column]`, plus ` (function)` when known.
  std::string toString() const;
};

// XLA's stack-frame tables resolved: metadata's `stack_frame_id=N` names a frame, a frame a file location and
// its caller (`parent_frame_id`), a location a file name, function name, line and column. Rows that do not
// read as expected are skipped (the verbatim tables still print back); ids that name nothing resolve to
// nothing. Never fails.
class StackFrameIndex {
 public:
  StackFrameIndex() = default;
  explicit StackFrameIndex(const std::vector<HeaderTable>& tables);

  bool empty() const { return m_frames.empty(); }
  // The frame itself first, then its callers; stops at a frame without a parent, a frame that is its own
  // parent (XLA prints the outermost frame that way), an unknown id, a repeated frame, or 64 frames.
  std::vector<SourceLocation> stack(int64_t frameId) const;
  std::optional<SourceLocation> location(int64_t frameId) const;

 private:
  struct Location {
    int64_t file = 0;
    int64_t function = 0;
    int64_t line = 0;
    int64_t column = 0;
  };
  struct Frame {
    int64_t location = 0;
    int64_t parent = 0;
  };
  std::optional<SourceLocation> resolveLocation(int64_t id) const;

  std::unordered_map<int64_t, std::string> m_files;
  std::unordered_map<int64_t, std::string> m_functions;
  std::unordered_map<int64_t, Location> m_locations;
  std::unordered_map<int64_t, Frame> m_frames;
};

// The `stack_frame_id=N` of metadata (kept in OpMetadata::extra), if any.
std::optional<int64_t> stackFrameId(const OpMetadata& metadata);

}  // namespace fusionscope::core
