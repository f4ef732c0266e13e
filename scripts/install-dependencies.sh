#!/usr/bin/env bash
# Installs the Debian packages Herald needs, if any is missing.
#
#   scripts/install-dependencies.sh demo   # what `make demo` builds with and runs (scripts/packages-demo.txt)
#   scripts/install-dependencies.sh test   # that, and what the tests and benchmarks use (scripts/packages-test.txt)
#   scripts/install-dependencies.sh --names demo|test   # print the set's package names, install nothing
#
# Debian 12 (bookworm) is what is supported and proven (README.md): every name in both lists is a
# package of bookworm's own archive, which `make test` checks in a debootstrap'ed bookworm root
# (scripts/check-package-names.sh). Needs root (or sudo) only when something is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

names_only=0
if [ "${1:-}" = --names ]; then names_only=1; shift; fi
set_name=${1:-test}
case "$set_name" in
  demo) lists=(scripts/packages-demo.txt) ;;
  test) lists=(scripts/packages-demo.txt scripts/packages-test.txt) ;;
  *) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac

# The package names of the lists: the first word of each line that is not a comment.
mapfile -t packages < <(sed -e 's/#.*//' "${lists[@]}" | awk 'NF { print $1 }')
if [ "$names_only" = 1 ]; then printf '%s\n' "${packages[@]}"; exit 0; fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "dependencies ($set_name): all system packages present"
  exit 0
fi

echo "dependencies ($set_name): installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "dependencies ($set_name): installed ${missing[*]}"
