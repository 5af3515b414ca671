// The collector-overhead loop without Python in it, for scripts/gpu-check: N launches of an empty kernel through
// the CUDA runtime, timed between synchronisations after a warm-up; prints {"launches", "seconds"}. The launch
// path alone (a few microseconds a launch), so the per-launch cost of tracing shows undiluted.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void empty() {}

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 100000;
  for (int i = 0; i < 1000; ++i) empty<<<1, 32>>>();
  if (cudaDeviceSynchronize() != cudaSuccess) {
    std::fprintf(stderr, "launch_loop: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) empty<<<1, 32>>>();
  cudaDeviceSynchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"launches\": %ld, \"seconds\": %.6f}\n", n, seconds);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
