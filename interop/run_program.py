"""Runs one program of jax_programs.py (or tf_mnist.py) once under XLA's dump flags, optionally profiled.

usage: run_program.py NAME --dump DIR [--unfused] [--profile DIR] [--iterations N]

XLA_FLAGS is set here, before jax is imported: XLA reads it once per process.
"""
import argparse
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--dump", required=True)
    ap.add_argument("--unfused", action="store_true", help="--xla_disable_hlo_passes=fusion")
    ap.add_argument("--profile", help="write a jax.profiler trace (Perfetto JSON) under this directory")
    ap.add_argument("--iterations", type=int, default=5)
    a = ap.parse_args()

    flags = [f"--xla_dump_to={a.dump}", "--xla_dump_hlo_pass_re=.*", "--xla_dump_hlo_as_text",
             "--xla_dump_hlo_as_dot"]
    if a.unfused:
        flags.append("--xla_disable_hlo_passes=fusion")
    os.environ["XLA_FLAGS"] = " ".join(flags)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

    if a.name == "tf_mnist":
        import tf_mnist
        tf_mnist.run(a.iterations, a.profile)
        return

    import jax
    import jax_programs
    fn, args = jax_programs.PROGRAMS[a.name]()
    jax.block_until_ready(fn(*args))  # compile (writes the dumps) and warm up
    if a.profile:
        with jax.profiler.trace(a.profile, create_perfetto_trace=True):
            for _ in range(a.iterations):
                jax.block_until_ready(fn(*args))


if __name__ == "__main__":
    main()
