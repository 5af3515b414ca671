"""Writes vectors.json: XLA's rng-bit-generator outputs as XLA computes them on the CPU, the reference
FusionScope's evaluator and generated code are tested against bit for bit. Two-word states go through JAX
(lax.rng_bit_generator); JAX refuses Philox's three-word state, so those go through TensorFlow's XLA op
(tf.function(jit_compile=True) of XlaRngBitGenerator).

usage: python make_vectors.py [OUT]     (a Python with jax and tensorflow; default OUT: vectors.json here)

Each case: the algorithm as HLO spells it, the u64 state, the output shape and element type, and what XLA
returned: the new state and the bits (u64 values as decimal strings, JSON numbers lose them).
"""
import json
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

ALGORITHMS = {"rng_default": lax.RandomAlgorithm.RNG_DEFAULT, "rng_three_fry": lax.RandomAlgorithm.RNG_THREE_FRY,
              "rng_philox": lax.RandomAlgorithm.RNG_PHILOX}
DTYPES = {"u8": jnp.uint8, "u16": jnp.uint16, "u32": jnp.uint32, "u64": jnp.uint64}


def jax_case(algorithm, state, shape, dtype):
    fn = jax.jit(lambda k: lax.rng_bit_generator(k, shape, dtype=DTYPES[dtype], algorithm=ALGORITHMS[algorithm]))
    new_state, bits = fn(jnp.asarray(state))
    return np.asarray(new_state), np.asarray(bits)


def tf_philox_case(state, shape, dtype):
    import tensorflow as tf
    from tensorflow.compiler.tf2xla.python import xla
    types = {"u8": tf.uint8, "u16": tf.uint16, "u32": tf.uint32, "u64": tf.uint64}
    fn = tf.function(lambda s: xla.rng_bit_generator(tf.random.Algorithm.PHILOX, s, list(shape), dtype=types[dtype]),
                     jit_compile=True)
    new_state, bits = fn(tf.constant(state))
    return new_state.numpy(), bits.numpy()


def case(algorithm, state, shape, dtype):
    state = np.array(state, dtype=np.uint64)
    if len(state) == 2:
        new_state, bits = jax_case(algorithm, state, shape, dtype)
    else:
        new_state, bits = tf_philox_case(state, shape, dtype)
    assert bits.shape == tuple(shape), (bits.shape, shape)
    return {"algorithm": algorithm, "state": [str(v) for v in state], "shape": list(shape), "type": dtype,
            "new_state": [str(v) for v in new_state], "bits": [str(v) for v in np.asarray(bits).reshape(-1)]}


def main():
    jax.config.update("jax_enable_x64", True)
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                             "vectors.json")
    big = (1 << 64) - 3  # counters that carry out of the low word
    shapes = [(), (1,), (7,), (3, 5), (5, 3), (2, 3, 4), (4, 1, 3), (1, 9), (3, 3, 3)]
    cases = []
    for algorithm in ALGORITHMS:
        for dtype in DTYPES:
            for shape in shapes:
                cases.append(case(algorithm, [0x0123456789ABCDEF, 42], shape, dtype))
        cases.append(case(algorithm, [7, big], (3, 5), "u32"))
        cases.append(case(algorithm, [7, big], (5,), "u64"))
    for state in ([1, 2, 3], [0xDEADBEEF, big, 5], [0, 0, (1 << 64) - 1]):
        for dtype, shape in (("u32", (6, 5)), ("u64", (3, 3)), ("u8", (9,))):
            cases.append(case("rng_philox", state, shape, dtype))
    import importlib.metadata as md
    versions = {dist: md.version(dist) for dist in ("jax", "jaxlib", "tensorflow-cpu")}
    with open(out, "w") as f:
        # One case per line: reviewable, and diffs stay small.
        f.write('{"versions": ' + json.dumps(versions) + ',\n"cases": [\n')
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write("\n]}\n")
    print(f"{out}: {len(cases)} cases ({versions})")


if __name__ == "__main__":
    main()
