"""A small GPT-style transformer's training step, dumped by XLA: FusionScope's big real JAX module.

usage: llm_train.py --dump DIR [--layers N] [--every-pass] [--flat]

Six (--layers) pre-LayerNorm decoder blocks (causal multi-head attention + GELU MLP), token and position embeddings, a
tied output projection and cross-entropy loss; one AdamW step on jax.value_and_grad of the loss. Layers are
named with jax.named_scope, so every instruction's metadata op_name carries its place in the model
(`jit(step)/jit(main)/transpose(jvp(block_1))/attn/dot_general`): what the viewer's scope groups read.
XLA_FLAGS is set here, before jax is imported.
"""
import argparse
import os


def build(layers=4, d_model=128, heads=4, vocab=512, seq=64, batch=8):
    import jax
    import jax.numpy as jnp

    def layernorm(x, g, b):
        with jax.named_scope("layernorm"):
            mean = jnp.mean(x, axis=-1, keepdims=True)
            var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
            return (x - mean) * jax.lax.rsqrt(var + 1e-5) * g + b

    def attention(p, x):
        with jax.named_scope("attn"):
            bsz, t, _ = x.shape
            qkv = x @ p["wqkv"]
            q, k, v = jnp.split(qkv, 3, axis=-1)
            split = lambda a: a.reshape(bsz, t, heads, d_model // heads).transpose(0, 2, 1, 3)
            q, k, v = split(q), split(k), split(v)
            s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(d_model // heads)
            mask = jnp.tril(jnp.ones((t, t), bool))
            s = jnp.where(mask, s, -1e9)
            o = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)
            return o.transpose(0, 2, 1, 3).reshape(bsz, t, d_model) @ p["wo"]

    def mlp(p, x):
        with jax.named_scope("mlp"):
            return jax.nn.gelu(x @ p["w1"] + p["b1"], approximate=True) @ p["w2"] + p["b2"]

    def block(p, x, i):
        with jax.named_scope(f"block_{i}"):
            x = x + attention(p, layernorm(x, p["ln1_g"], p["ln1_b"]))
            return x + mlp(p, layernorm(x, p["ln2_g"], p["ln2_b"]))

    def loss_fn(params, tokens, targets):
        with jax.named_scope("embed"):
            x = params["wte"][tokens] + params["wpe"][None, : tokens.shape[1]]
        for i, p in enumerate(params["blocks"]):
            x = block(p, x, i)
        with jax.named_scope("head"):
            x = layernorm(x, params["lnf_g"], params["lnf_b"])
            logits = x @ params["wte"].T
        with jax.named_scope("loss"):
            logp = jax.nn.log_softmax(logits, axis=-1)
            return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))

    def adamw(params, grads, m, v, step, lr=3e-4, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
        with jax.named_scope("adamw"):
            m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
            v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
            c1, c2 = 1 - b1 ** step, 1 - b2 ** step
            params = jax.tree_util.tree_map(
                lambda p, m, v: p - lr * ((m / c1) / (jnp.sqrt(v / c2) + eps) + wd * p), params, m, v)
            return params, m, v

    def step(params, m, v, t, tokens, targets):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
        params, m, v = adamw(params, grads, m, v, t + 1.0)
        return params, m, v, t + 1.0, loss

    keys = iter(jax.random.split(jax.random.PRNGKey(0), 64))
    normal = lambda *shape: jax.random.normal(next(keys), shape) * 0.02
    params = {
        "wte": normal(vocab, d_model), "wpe": normal(seq, d_model),
        "lnf_g": jnp.ones(d_model), "lnf_b": jnp.zeros(d_model),
        "blocks": [{"ln1_g": jnp.ones(d_model), "ln1_b": jnp.zeros(d_model),
                    "ln2_g": jnp.ones(d_model), "ln2_b": jnp.zeros(d_model),
                    "wqkv": normal(d_model, 3 * d_model), "wo": normal(d_model, d_model),
                    "w1": normal(d_model, 4 * d_model), "b1": jnp.zeros(4 * d_model),
                    "w2": normal(4 * d_model, d_model), "b2": jnp.zeros(d_model)} for _ in range(layers)],
    }
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    tokens = jax.random.randint(next(keys), (batch, seq), 0, vocab)
    targets = jnp.roll(tokens, -1, axis=1)
    return jax.jit(step), (params, zeros, zeros, jnp.float32(0.0), tokens, targets)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--every-pass", action="store_true",
                    help="dump the module after every pass that changed it (bench/viewer-walk steps through them)")
    ap.add_argument("--flat", action="store_true",
                    help="no jax.named_scope: op_names without the model's layers, as most programs have them")
    a = ap.parse_args()
    flags = f"--xla_dump_to={a.dump} --xla_dump_hlo_as_text"
    if a.every_pass:
        flags += " --xla_dump_hlo_pass_re=.*"
    os.environ["XLA_FLAGS"] = flags
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    if a.flat:
        import contextlib
        jax.named_scope = lambda name: contextlib.nullcontext()
    fn, args = build(layers=a.layers)
    jax.block_until_ready(fn(*args))


if __name__ == "__main__":
    main()
