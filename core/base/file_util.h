#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace fusionscope {

// Reads a whole file. Errors read `PATH: error: cannot read: REASON`. `extraCapacity` bytes are reserved
// past the end (parsers such as simdjson need padding after the text) without changing the size.
// Only regular files are read: a directory, FIFO, device or socket is refused before any byte is read
// ("is a FIFO (named pipe)"), so /dev/zero cannot fill memory and a FIFO with no writer cannot hang the caller.
StatusOr<std::string> readFile(const std::string& path, size_t extraCapacity = 0);

// Opens `path` for reading, refusing what readFile refuses, without blocking on a FIFO; the caller closes the
// descriptor.
StatusOr<int> openRegularFile(const std::string& path);

// Writes `content` to `path` atomically: a temporary file in the same directory is written, flushed and
// renamed over `path`, so readers see the old file or the new one, never half of it. On failure the
// temporary file is removed and `path` is untouched.
Status writeFileAtomic(const std::string& path, std::string_view content);

// Writes several files: every file goes to a temporary first, and the renames happen only when all the
// writes worked, so a full disk or an unwritable directory leaves none of the new files behind.
struct FileContent {
  std::string path;
  std::string content;
};
Status writeFilesAtomic(const std::vector<FileContent>& files);

// Creates a directory and its parents; fine if it exists. Errors name the directory.
Status makeDirectories(const std::string& path);

}  // namespace fusionscope
