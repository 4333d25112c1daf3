#!/usr/bin/env bash
# clang-format --dry-run -Werror over every tracked C/C++ file (the repo's .clang-format).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format_check: clang-format is not installed" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.c' '*.cpp')
if ! clang-format --dry-run -Werror "${files[@]}" 2>/tmp/nbits_format.log; then
  grep "error:" /tmp/nbits_format.log | cut -d: -f1 | sort -u | sed 's/^/not formatted: /' >&2
  echo "format_check: run clang-format -i on the files above" >&2
  exit 1
fi
echo "format_check: ${#files[@]} files formatted"
