#!/usr/bin/env bash
# ctest driver for the XLA interop checks: finds the Python that has jax and runs xla_accepts.py.
#   xla_parser_check.sh printed CLI HELPER DATA_DIR   `fusionscope-cli print` every HLO .txt under DATA_DIR into a
#                                                     temporary folder; XLA's parser must accept every output
#   xla_parser_check.sh raw HELPER DATA_DIR           XLA's parser must accept every HLO .txt under DATA_DIR as is
#   xla_parser_check.sh rejects HELPER FILE           XLA's parser must reject FILE (the helper can fail)
# Python: $FUSIONSCOPE_XLA_VENV/bin/python, else the venv scripts/xla-corpus makes (out/xla-venv), else python3.
# Exit status: 0 pass, 1 fail, 77 skipped (no jax), as xla_accepts.py.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
skip=77

if [ -n "${FUSIONSCOPE_XLA_VENV:-}" ]; then
  py="$FUSIONSCOPE_XLA_VENV/bin/python"
  [ -x "$py" ] || { echo "FUSIONSCOPE_XLA_VENV=$FUSIONSCOPE_XLA_VENV has no bin/python" >&2; exit 1; }
elif [ -x "$root/out/xla-venv/bin/python" ]; then
  py="$root/out/xla-venv/bin/python"
elif command -v python3 > /dev/null; then
  py=python3
else
  echo "skipped: no python3 (set FUSIONSCOPE_XLA_VENV to a venv with jax)"
  exit $skip
fi

# The HLO modules under $1: every .txt that starts with an HloModule line (not versions.txt or XLA's reports).
hlo_files() {
  find "$1" -name '*.txt' -type f | sort | while read -r f; do
    head -c 10 "$f" | grep -q '^HloModule' && printf '%s\n' "$f"
  done
}

mode="${1:-}"
case "$mode" in
  printed)
    [ $# -eq 4 ] || { echo "usage: $0 printed CLI HELPER DATA_DIR" >&2; exit 2; }
    cli=$2 helper=$3 data=$4
    mapfile -t inputs < <(hlo_files "$data")
    [ ${#inputs[@]} -gt 0 ] || { echo "no HLO .txt files under $data" >&2; exit 1; }
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/fs-xla-printed.XXXXXX")
    outputs=() failed=0
    for f in "${inputs[@]}"; do
      out="$tmp/${f#"$data"/}"
      mkdir -p "$(dirname "$out")"
      if "$cli" print "$f" -o "$out" 2> "$tmp/stderr"; then
        outputs+=("$out")
      else
        failed=$((failed + 1))
        echo "fusionscope-cli print $f failed: $(head -n 3 "$tmp/stderr")" >&2
      fi
    done
    if [ $failed -gt 0 ]; then
      echo "$failed of ${#inputs[@]} files did not print; outputs kept in $tmp" >&2
      exit 1
    fi
    "$py" "$helper" "${outputs[@]}"
    rc=$?
    if [ $rc -eq 0 ] || [ $rc -eq $skip ]; then rm -rf "$tmp"; else echo "printed files kept in $tmp" >&2; fi
    exit $rc
    ;;
  raw)
    [ $# -eq 3 ] || { echo "usage: $0 raw HELPER DATA_DIR" >&2; exit 2; }
    mapfile -t inputs < <(hlo_files "$3")
    [ ${#inputs[@]} -gt 0 ] || { echo "no HLO .txt files under $3" >&2; exit 1; }
    exec "$py" "$2" "${inputs[@]}"
    ;;
  rejects)
    [ $# -eq 3 ] || { echo "usage: $0 rejects HELPER FILE" >&2; exit 2; }
    "$py" "$2" "$3"
    rc=$?
    case $rc in
      1) echo "XLA's parser rejects $3, as it should"; exit 0 ;;
      "$skip") exit $skip ;;
      0) echo "XLA's parser accepted $3, which it must reject: the helper cannot tell good from bad" >&2; exit 1 ;;
      *) exit 1 ;;
    esac
    ;;
  *) echo "usage: $0 printed|raw|rejects ..." >&2; exit 2 ;;
esac
