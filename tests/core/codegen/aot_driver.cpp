// A program that links an ahead-of-time compiled module as a user's would (aot_compiler_test.cpp builds it with
// `c++ aot_driver.cpp NAME.o -lm`, -DFS_AOT_HEADER="NAME.h" -DFS_AOT_CLASS=NS::NAME): it reads argument i from
// DIR/argI.bin into arg_data(i), runs the module once and writes result i to DIR/resultI.bin. Exit 0, or 3 when a
// file has the wrong size, 4 when Run() fails.
#include FS_AOT_HEADER

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  FS_AOT_CLASS model;
  if (!model.ok()) return 4;
  for (int i = 0; i < FS_AOT_CLASS::kNumArgs; ++i) {
    std::FILE* in = std::fopen((dir + "/arg" + std::to_string(i) + ".bin").c_str(), "rb");
    if (in == nullptr) return 3;
    const size_t got = std::fread(model.arg_data(i), 1, model.arg_size(i), in);
    const bool extra = std::fgetc(in) != EOF;
    std::fclose(in);
    if (got != model.arg_size(i) || extra) return 3;
  }
  if (!model.Run()) return 4;
  for (int i = 0; i < FS_AOT_CLASS::kNumResults; ++i) {
    std::FILE* out = std::fopen((dir + "/result" + std::to_string(i) + ".bin").c_str(), "wb");
    if (out == nullptr) return 3;
    const size_t wrote = std::fwrite(model.result_data(i), 1, model.result_size(i), out);
    if (std::fclose(out) != 0 || wrote != model.result_size(i)) return 3;
  }
  return 0;
}
