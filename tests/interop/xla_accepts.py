#!/usr/bin/env python3
"""Checks that XLA's own HLO text parser, from the installed jaxlib, accepts each file given.

usage: xla_accepts.py FILE...

Exit status: 0 every file parsed; 1 some did not (one message per file, XLA's error with its line:column);
2 bad usage or an unreadable file; 77 jax (or a jaxlib with an HLO text parser) is not importable, with a one-line
skip message, so ctest reports the test as skipped (SKIP_RETURN_CODE 77).

Only parsing is checked: the binding does not run XLA's verifier (it accepts an add of f32[2] and f32[3]).
"""
import os
import sys

SKIP = 77


def find_parser():
    """XLA's HLO text parser as the installed jaxlib binds it, or None.

    jaxlib 0.10 has it as xla_client.hlo.hlo_module_from_text; older jaxlibs had it on xla_client._xla.
    """
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        from jax._src.lib import xla_client
    except Exception:  # ImportError, or a jax that fails while importing
        return None
    for holder in (getattr(xla_client, "hlo", None), getattr(xla_client, "_xla", None)):
        parse = getattr(holder, "hlo_module_from_text", None)
        if parse is not None:
            return parse
    return None


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(argv) < 2 else sys.stdout)
        return 2 if len(argv) < 2 else 0
    parse = find_parser()
    if parse is None:
        print(f"skipped: no XLA HLO parser: jax is not importable by {sys.executable} "
              "(set FUSIONSCOPE_XLA_VENV to a venv with jax, e.g. the one scripts/xla-corpus makes)")
        return SKIP
    failed = 0
    for path in argv[1:]:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            print(f"{path}: cannot read: {e}", file=sys.stderr)
            return 2
        try:
            parse(text)
        except Exception as e:  # XLA raises JaxRuntimeError (INVALID_ARGUMENT) with its parser's message
            failed += 1
            print(f"{path}: XLA's parser rejects it:\n  " + str(e).strip().replace("\n", "\n  "), file=sys.stderr)
    if failed:
        print(f"xla_accepts: {failed} of {len(argv) - 1} files rejected by XLA's parser", file=sys.stderr)
        return 1
    print(f"xla_accepts: XLA's parser accepts all {len(argv) - 1} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
