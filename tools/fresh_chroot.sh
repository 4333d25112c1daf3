#!/usr/bin/env bash
# Times a README command on a fresh Debian 12: a `debootstrap --variant=minbase bookworm` folder
# with what a new machine of this project's kind already has (git, gcc/g++, make, cmake, ninja,
# GoogleTest, python3, and this machine's Node.js and Rust), this checkout cloned into it and
# ../shared bound read-only beside it; everything else (apt packages, ccache, venvs, models, npm
# packages) is installed by the command itself. As root:
#   tools/fresh_chroot.sh DIR main     # bash tools/main.sh
#   tools/fresh_chroot.sh DIR test     # CI=true bash .ci/run
#   tools/fresh_chroot.sh DIR clean    # unmount and remove DIR
# DIR must not exist for main / test (a fresh one each time). The machine's CA certificates and
# its pip / npm certificate settings are copied in (a proxy that re-signs TLS needs them).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: tools/fresh_chroot.sh DIR main|test|clean" >&2; exit 2; }
dir=$1 what=$2
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${NBITS_SHARED:-$root/../shared}
unmount_all() {
  local base
  base=$(realpath -m "$dir")
  mount | awk '{print $3}' | { grep "^$base" || true; } | sort -r | xargs -r -n1 umount -l
}
case "$what" in
  clean) unmount_all; rm -rf "$dir"; exit 0 ;;
  main | test) ;;
  *) echo "usage: tools/fresh_chroot.sh DIR main|test|clean" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "fresh_chroot.sh: run as root (debootstrap, chroot, mount)" >&2; exit 1; }
[ ! -e "$dir" ] || { echo "fresh_chroot.sh: $dir exists (tools/fresh_chroot.sh $dir clean)" >&2; exit 1; }
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
echo "-- debootstrap into $dir"
debootstrap --variant=minbase bookworm "$dir" http://deb.debian.org/debian >/dev/null
cp /etc/apt/sources.list.d/debian.sources "$dir/etc/apt/sources.list.d/" 2>/dev/null && rm -f "$dir/etc/apt/sources.list"
cp /etc/resolv.conf "$dir/etc/"
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$dir/etc/"
[ -f "$HOME/.npmrc" ] && cp "$HOME/.npmrc" "$dir/root/.npmrc"
mkdir -p "$dir/usr/local/share/ca-certificates" "$dir/work/main" "$dir/work/shared" "$dir/root/.cargo" "$dir/root/.rustup"
cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/" 2>/dev/null || true
mount -t proc proc "$dir/proc"
mount --rbind /sys "$dir/sys"
mount --rbind /dev "$dir/dev"
mount --bind "$shared" "$dir/work/shared" && mount -o remount,bind,ro "$dir/work/shared"
# What the machine kind has before a session: Rust (rustup's toolchains bound read-only-in-use),
# Node.js with npm, and the Debian packages below.
if [ -d "$HOME/.rustup" ]; then
  cp -a "$HOME/.cargo/bin" "$dir/root/.cargo/"
  mount --bind "$HOME/.rustup" "$dir/root/.rustup"
fi
if command -v node >/dev/null; then
  cp "$(command -v node)" "$dir/usr/bin/node"
  cp -a /usr/lib/node_modules "$dir/usr/lib/"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$dir/usr/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$dir/usr/bin/npx"
fi
chroot "$dir" /bin/bash -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
  apt-get install -y -qq ca-certificates git gcc g++ make cmake ninja-build libgtest-dev python3 >/dev/null 2>&1 &&
  update-ca-certificates >/dev/null 2>&1'
git clone -q "$root" "$dir/work/main"
env_vars=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb)
for v in NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO SSL_CERT_DIR SSL_CERT_FILE PIP_CERT REQUESTS_CA_BUNDLE CURL_CA_BUNDLE \
         PIP_DEFAULT_TIMEOUT PIP_DISABLE_PIP_VERSION_CHECK; do
  [ -n "${!v:-}" ] && env_vars+=("$v=${!v}")
done
if [ "$what" = main ]; then
  cmd='bash tools/main.sh'
else
  cmd='CI=true bash .ci/run'
fi
echo "-- $cmd in $dir (fresh)"
t0=$(date +%s)
rc=0
chroot "$dir" /usr/bin/env -i "${env_vars[@]}" /bin/bash -c "cd /work/main && $cmd" || rc=$?
echo "-- $cmd: exit $rc after $(( $(date +%s) - t0 )) s"
exit "$rc"
