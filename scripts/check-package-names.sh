#!/usr/bin/env bash
# Proves that every package scripts/install-dependencies.sh asks for exists in Debian 12's own
# archive: in a minimal bookworm root with only Debian's sources (scripts/bookworm-root.sh),
# `apt-get install -s` of each set (demo: scripts/packages-demo.txt; test: that and
# scripts/packages-test.txt) must resolve. A name apt cannot find (kubectl, say: Debian ships only kubernetes-client) fails the
# run with apt's own message. Run by `make test`; needs root (debootstrap, chroot).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "package names: NOT CHECKED (needs root for debootstrap and chroot)" >&2
  exit 0
fi
root=.local/bookworm-base
scripts/bookworm-root.sh "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
chroot "$root" apt-get update -qq >/dev/null 2>.local/package-names.log \
  || { cat .local/package-names.log >&2; echo "package names: apt-get update failed in $root" >&2; exit 1; }

status=0
for set_name in demo test; do
  mapfile -t names < <(scripts/install-dependencies.sh --names "$set_name")
  if chroot "$root" apt-get install -s -qq --no-install-recommends "${names[@]}" >.local/package-names.log 2>&1; then
    echo "package names: all ${#names[@]} of the $set_name set resolve in Debian bookworm's archive"
  else
    grep -E '^E:' .local/package-names.log >&2 || tail -5 .local/package-names.log >&2
    echo "package names: the $set_name set names packages Debian bookworm does not have" >&2
    status=1
  fi
done
exit $status
