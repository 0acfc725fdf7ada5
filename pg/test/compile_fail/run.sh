#!/usr/bin/env bash
# Compile-fail tests: every snippet here except ok.cpp must fail to compile, with a
# diagnostic matching its "// expect: REGEX" line; ok.cpp must compile. consumed_*.cpp
# rely on clang's typestate analysis (-Wconsumed) and run only with clang.
#   run.sh CXX [compiler flags...]    (include directories of inlet::pg and its deps)
set -uo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
cxx=$1
shift
is_clang=0
if "$cxx" --version 2>/dev/null | grep -q clang; then is_clang=1; fi
flags=(-std=c++20 -fsyntax-only "$@")
if [ $is_clang = 1 ]; then flags+=(-Wconsumed -Werror=consumed); fi
fail=0
ran=0
for f in "$dir"/*.cpp; do
  name=$(basename "$f")
  case "$name" in consumed_*) [ $is_clang = 1 ] || continue ;; esac
  out=$("$cxx" "${flags[@]}" "$f" 2>&1)
  rc=$?
  ran=$((ran + 1))
  if [ "$name" = ok.cpp ]; then
    if [ $rc -ne 0 ]; then echo "FAIL $name: does not compile"; echo "$out" | head -20; fail=1
    else echo "ok   $name compiles"; fi
    continue
  fi
  expect=$(sed -n 's#^// expect: ##p' "$f" | head -1)
  if [ $rc -eq 0 ]; then
    echo "FAIL $name: compiled"; fail=1
  # (no grep -q: it exits at the first match and, under pipefail, the SIGPIPE of the
  # grep before it would read as "no match" when the diagnostics are long)
  elif ! echo "$out" | grep -E "error" | grep -E "$expect" >/dev/null; then
    echo "FAIL $name: failed, but no error matches /$expect/:"; echo "$out" | grep -E "error" | head -5; fail=1
  else
    echo "ok   $name: $(echo "$out" | grep -E "error" | grep -E "$expect" | head -1 | cut -c1-160)"
  fi
done
echo "$ran snippets with $cxx"
exit $fail
