#!/usr/bin/env bash
# Makes a minimal Debian bookworm root (debootstrap --variant=minbase) with the apt sources
# debian:bookworm-slim ships, once: a root that exists is kept (delete it to make it again).
# Used by scripts/check-package-names.sh (every package name Herald installs exists in bookworm)
# and scripts/check-image.sh (the container's runtime stage), which copies it.
#
#   scripts/bookworm-root.sh DIR      # needs root (debootstrap); about a minute the first time
set -euo pipefail
cd "$(dirname "$0")/.."

root=$1
stamp="$root/.herald-bookworm-base"
[ -f "$stamp" ] && exit 0
[ "$(id -u)" -eq 0 ] || { echo "bookworm-root: needs root (debootstrap)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "bookworm-root: debootstrap not found (apt-get install debootstrap)" >&2; exit 1; }
rm -rf "$root"
mkdir -p .local
echo "bookworm-root: debootstrap --variant=minbase bookworm $root (about a minute)"
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >.local/bookworm-root.log 2>&1 \
  || { tail -20 .local/bookworm-root.log >&2; exit 1; }
# The sources debian:bookworm-slim ships: the release, its updates and its security updates.
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
touch "$stamp"
