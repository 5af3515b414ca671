// Running the real fusionscope-cli from tests: one command line through the shell, stdin from /dev/null, stdout and
// stderr captured through files in a scratch directory. Shared by the CLI suites in tests/app.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fusionscope::testing {

struct CliResult {
  int status = -1;    // the raw wait status (WIFSIGNALED tells a crash)
  int exitCode = -1;  // the exit code, or -1 when the program did not exit normally
  std::string out;
  std::string err;
};

inline std::string readAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline std::string shellQuoted(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Runs `program args...`; the captured output goes to scratch/stdout.txt and scratch/stderr.txt.
inline CliResult runProgram(const std::string& program, const std::vector<std::string>& args,
                            const std::filesystem::path& scratch) {
  std::string command = shellQuoted(program);
  for (const std::string& arg : args) command += " " + shellQuoted(arg);
  const std::filesystem::path out = scratch / "stdout.txt";
  const std::filesystem::path err = scratch / "stderr.txt";
  command += " >" + shellQuoted(out.string()) + " 2>" + shellQuoted(err.string()) + " </dev/null";
  CliResult result;
  result.status = std::system(command.c_str());
  result.exitCode = result.status != -1 && WIFEXITED(result.status) ? WEXITSTATUS(result.status) : -1;
  result.out = readAll(out);
  result.err = readAll(err);
  return result;
}

}  // namespace fusionscope::testing
