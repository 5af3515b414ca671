#!/usr/bin/env bash
# The core's layer rules, checked on the includes: the IR (core/ir) and core/base depend on nothing above them.
# Prints each offending include and exits 1.
set -euo pipefail
root="${1:?usage: layering_check.sh SOURCE_DIR}"
status=0
check() {  # DIR PATTERN-OF-FORBIDDEN-INCLUDES
  if grep -rnE "#include \"($2)/" "$root/$1" --include='*.h' --include='*.cpp'; then
    echo "layering: $1 must not include $2" >&2
    status=1
  fi
}
check core/base 'core/(ir|text|passes|pipeline|eval|dot|dump|codegen|runtime|graphviz|io)|profiler|viewer|app'
check core/ir 'core/(text|passes|pipeline|eval|dot|dump|codegen|runtime|graphviz|io)|profiler|viewer|app'
check core/text 'core/(passes|pipeline|eval|dot|dump|codegen|runtime|graphviz|io)|profiler|viewer|app'
check core/passes 'core/(pipeline|dot|dump|codegen|runtime|graphviz|io)|core/eval/(evaluator|value|eval_)|profiler|viewer|app'
check core/linalg 'core/(text|passes|pipeline|eval|dot|dump|codegen|runtime|graphviz|io)|profiler|viewer|app'
check core/eval 'core/(passes|pipeline|dot|dump|codegen|runtime|graphviz|io)|profiler|viewer|app'
# fs_profiler knows trace events, not HLO; profiler/hlo_link (fs_hlo_link) is where it meets the IR.
for dir in profiler/trace profiler/compare profiler/cupti profiler/gpu; do
  check "$dir" 'core/(ir|text|passes|pipeline|eval|dot|dump|codegen|runtime|graphviz|io)|viewer|app'
done
exit $status
