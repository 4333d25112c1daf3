#!/usr/bin/env bash
# The test command: builds and runs every suite (release, ASan+UBSan, fuzzers).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
echo "== release build + tests"
bash tools/build.sh release
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900)
echo "== ASan+UBSan build + tests"
bash tools/build.sh asan
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j "$(nproc)" --timeout 1800)
echo "== fuzzers (bounded)"
bash tools/build.sh fuzz
for f in build-fuzz/fuzz_*; do
  [ -x "$f" ] || continue
  mkdir -p build-fuzz/corpus/"$(basename "$f")"
  "$f" -max_total_time="${NBITS_FUZZ_SECONDS:-60}" -rss_limit_mb=4096 build-fuzz/corpus/"$(basename "$f")"
done
echo "== all suites passed"
