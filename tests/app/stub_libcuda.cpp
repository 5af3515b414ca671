// A stand-in libcuda.so.1 that exports nothing: on a machine without a GPU driver it lets `fusionscope-cli trace` get
// past its "is there a driver" check (a dlopen), so that trace_cli_test can run the rest of the command (the
// environment it sets, signal forwarding, the capture report). Nothing calls into it; a real CUDA program would fail
// to initialise against it.
extern "C" {
__attribute__((visibility("default"))) int fusionscope_stub_libcuda = 1;
}
