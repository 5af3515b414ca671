"""TensorFlow 2 MNIST softmax regression, one SGD step as a tf.function(jit_compile=True), for FusionScope's corpus.

The same model as jax_programs.mnist_step (batch of 100, 784 -> 10, learning rate 0.5) on random data, so the
corpus needs no download. run_program.py sets XLA_FLAGS before this module imports TensorFlow.
"""
import glob
import os


def build():
    """The jitted step and its state: (train_step, (x, y), (w, b)); train_step(x, y) returns the loss tensor.

    bench/vs-xla times train_step on these inputs against FusionScope's run of the dumped module.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.random.set_seed(0)
    w = tf.Variable(tf.zeros((784, 10)), name="w")
    b = tf.Variable(tf.zeros((10,)), name="b")
    x = tf.random.uniform((100, 784), seed=1)
    y = tf.one_hot(tf.range(100) % 10, 10)

    @tf.function(jit_compile=True)
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = tf.matmul(x, w) + b
            loss = -tf.reduce_mean(tf.reduce_sum(tf.nn.log_softmax(logits) * y, axis=1))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.5 * gw)
        b.assign_sub(0.5 * gb)
        return loss

    return train_step, (x, y), (w, b)


def run(iterations, profile_dir):
    train_step, (x, y), _ = build()
    import tensorflow as tf

    train_step(x, y).numpy()  # compile (writes the dumps) and warm up
    if not profile_dir:
        return
    tf.profiler.experimental.start(profile_dir)
    for _ in range(iterations):
        train_step(x, y).numpy()
    tf.profiler.experimental.stop()
    _xplane_to_trace(profile_dir)


def _xplane_to_trace(profile_dir):
    """TF writes only an XSpace (*.xplane.pb); convert it to a Chrome trace beside it with xprof when installed.

    Writes <run>/<host>.trace.json.gz, the name jax.profiler uses, so scripts/xla-corpus finds both alike.
    """
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError:
        print("tf_mnist: xprof is not installed; keeping only the xplane.pb profile")
        return
    import gzip
    for xplane in glob.glob(os.path.join(profile_dir, "**", "*.xplane.pb"), recursive=True):
        data, _ = raw_to_tool_data.xspace_to_tool_data([xplane], "trace_viewer", {})
        if isinstance(data, str):
            data = data.encode()
        out = xplane[: -len(".xplane.pb")] + ".trace.json.gz"
        with gzip.open(out, "wb") as f:
            f.write(data)
