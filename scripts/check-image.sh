#!/usr/bin/env bash
# make check-image: proves the runtime stage of Deploy/container/Containerfile without a container
# registry. It makes a minimal Debian bookworm root with debootstrap (--variant=minbase), installs
# exactly the Containerfile's runtime apt line into it, adds the release binaries as the image
# does (static Swift runtime, the migrations bundle, user 10001), and inside that root, as that
# user, with nothing from this host's environment:
#   - every binary resolves all its libraries (ldd) and answers --help and --version;
#   - herald migrate runs against PostgreSQL over TLS (verify-full), its password from a file;
#   - herald kafka create-topics finds Herald's topics on the development broker;
#   - apns-sim, herald-api, herald-center, herald-sender and herald-gateway start and their /readyz
#     answer 200.
#
#   scripts/check-image.sh BUILD_DIR      (run through scripts/with-infrastructure.sh by make)
#
# Needs root (debootstrap, chroot, mounting /proc). The root is kept in .local/image-root and
# made again when the Containerfile's package line changes.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=$1
root=.local/image-root
containerfile=Deploy/container/Containerfile
[ "$(id -u)" -eq 0 ] || { echo "check-image: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "check-image: debootstrap not found (apt-get install debootstrap)" >&2; exit 1; }

# The runtime stage's package list: the words after --no-install-recommends on the apt-get line
# that follows the "# runtime-packages" marker.
packages=$(awk '/^# runtime-packages/ { marked = 1 }
  marked && /apt-get install/ { sub(/.*--no-install-recommends /, ""); sub(/[ \\]*$/, ""); print; exit }' "$containerfile")
[ -n "$packages" ] || { echo "check-image: no runtime apt line found in $containerfile" >&2; exit 1; }
echo "check-image: runtime packages from $containerfile: $packages"

unmount_all() {
  for mount in proc dev; do
    mountpoint -q "$root/$mount" 2>/dev/null && umount -l "$root/$mount"
  done
  return 0
}

# Every process whose root is the image's root: what this run started there, and anything a run
# that was killed left behind (it would hold the ports).
processes_in_root() {
  local real process
  real=$(realpath -m "$root")
  for process in /proc/[0-9]*; do
    case "$(readlink "$process/root" 2>/dev/null)" in
      "$real" | "$real (deleted)") basename "$process" ;;
    esac
  done
  return 0
}
stop_processes_in_root() {
  local left
  left=$(processes_in_root)
  [ -n "$left" ] || return 0
  # shellcheck disable=SC2086
  kill $left 2>/dev/null || true
  for _ in $(seq 1 50); do [ -z "$(processes_in_root)" ] && return 0; sleep 0.1; done
  # shellcheck disable=SC2046
  kill -9 $(processes_in_root) 2>/dev/null || true
}
stamp="$root/.herald-packages"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$packages" ]; then
  [ -d "$root" ] && stop_processes_in_root
  unmount_all
  rm -rf "$root"
  scripts/bookworm-root.sh .local/bookworm-base
  cp -a .local/bookworm-base "$root"
  # The Containerfile's two runtime RUN lines, word for word in what they install and create.
  # shellcheck disable=SC2086
  chroot "$root" /bin/sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null && rm -rf /var/lib/apt/lists/*"
  chroot "$root" useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin herald
  echo "$packages" >"$stamp"
fi

# What a container runtime gives every container: /etc/hosts and /etc/resolv.conf.
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
pids=()
cleanup() {
  local status=$?
  stop_processes_in_root
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  unmount_all
  exit $status
}
stop_processes_in_root
trap cleanup EXIT

binaries=(herald herald-admin herald-api herald-center herald-sender herald-gateway apns-sim)
for binary in "${binaries[@]}"; do
  install -m 755 "$build_dir/$binary" "$root/usr/local/bin/"
done
# The operator's CLI links none of the server's C libraries (herald-admin, which it runs for
# migrate, kafka and dev, does).
if ldd "$build_dir/herald" | grep -E 'libpq|librdkafka|libnghttp2'; then
  echo "check-image: herald links a server library; it must reach them only through herald-admin" >&2
  exit 1
fi
echo "check-image: herald links neither libpq, librdkafka nor libnghttp2"
rm -rf "$root/usr/local/bin/herald_HeraldStore.resources"
cp -r "$build_dir/herald_HeraldStore.resources" "$root/usr/local/bin/"

# Secrets as files, mounted the way the kubelet mounts the manifests' Secret volume: owned by
# root, with the volume's defaultMode; with the pod's fsGroup, the files get that group and the
# group read bit (what the kubelet does to a read-only volume). Read from herald-api's
# Deployment, so a manifest whose user cannot read its secrets fails here.
manifest=Deploy/kubernetes/base/api.yaml
secret_mode=$(awk '/defaultMode:/ { print $2; exit }' "$manifest")
fs_group=$(awk '/^ *fsGroup:/ { print $2; exit }' "$manifest")
[ -n "$secret_mode" ] || { echo "check-image: no defaultMode on the Secret volume in $manifest" >&2; exit 1; }
mkdir -p "$root/run/secrets/herald" "$root/etc/herald/postgres-ca" "$root/var/herald"
printf '%s' "$HERALD_MASTER_KEY" >"$root/run/secrets/herald/master-key"
printf '%s\n' "$HERALD_POSTGRES_PASSWORD" >"$root/run/secrets/herald/postgres-password"
head -c 32 /dev/urandom | base64 | tr -d '\n' >"$root/run/secrets/herald/admin-token"
chown 10001:10001 "$root/var/herald"
chown -R 0:0 "$root/run/secrets/herald"
chmod "$secret_mode" "$root"/run/secrets/herald/*
if [ -n "$fs_group" ]; then
  chgrp -R "$fs_group" "$root/run/secrets/herald"
  chmod g+r "$root"/run/secrets/herald/*
fi
echo "check-image: secrets mounted as the kubelet would: root:${fs_group:-0}, mode $(stat -c %a "$root/run/secrets/herald/master-key")"
cp .local/postgres/tls/ca.crt "$root/etc/herald/postgres-ca/ca.crt"

settings=(
  PATH=/usr/local/bin:/usr/bin:/bin HOME=/var/herald
  HERALD_POSTGRES_HOST=localhost HERALD_POSTGRES_PORT="$HERALD_POSTGRES_PORT"
  HERALD_POSTGRES_USER="$HERALD_POSTGRES_USER" HERALD_POSTGRES_DATABASE="$HERALD_POSTGRES_DATABASE"
  HERALD_POSTGRES_TLS_MODE=verify-full HERALD_POSTGRES_TLS_CA_FILE=/etc/herald/postgres-ca/ca.crt
  HERALD_POSTGRES_PASSWORD_FILE=/run/secrets/herald/postgres-password
  HERALD_KAFKA_BROKERS="$HERALD_KAFKA_BROKERS" HERALD_LOG_FORMAT=json
)
# A command in the root as the image's user, with only the settings above.
as_image_user=(chroot --userspec=10001:10001 "$root" env -i "${settings[@]}")
in_image() {
  "${as_image_user[@]}" "$@"
}
# The same in the background, its process id (the service's own: chroot and env exec it) in pids.
start_in_image() {
  local log=$1
  shift
  (exec "${as_image_user[@]}" "$@" >"$log" 2>&1) &
  pids+=($!)
}

for binary in "${binaries[@]}"; do
  missing=$(chroot "$root" ldd "/usr/local/bin/$binary" | grep "not found" || true)
  [ -z "$missing" ] || { echo "check-image: $binary lacks libraries in the image: $missing" >&2; exit 1; }
  in_image "$binary" --help >/dev/null 2>&1 || { echo "check-image: $binary --help failed" >&2; exit 1; }
done
for binary in herald-api herald-center herald-sender herald-gateway; do
  version=$(in_image "$binary" --version)
  echo "check-image: $version: libraries resolved, --help answered"
done

in_image herald migrate >.local/image-migrate.log 2>&1 \
  || { cat .local/image-migrate.log >&2; echo "check-image: herald migrate failed in the image" >&2; exit 1; }
echo "check-image: herald migrate ran against PostgreSQL over TLS (verify-full)"
topics=$(in_image herald kafka create-topics --timeout-seconds 10 2>/dev/null)
[ "$(grep -c '"state":"exists"' <<<"$topics")" = 5 ] \
  || { echo "$topics" >&2; echo "check-image: herald kafka create-topics did not find the 5 topics" >&2; exit 1; }
echo "check-image: herald kafka create-topics found Herald's 5 topics"

rm -f "$root/var/herald/apns-sim.ready" "$root/var/herald/apns-sim.crt"
start_in_image .local/image-apns-sim.log apns-sim --host 127.0.0.1 --port 22197 --admin-port 22198 \
  --write-certificate /var/herald/apns-sim.crt --ready-file /var/herald/apns-sim.ready
# The sender trusts the certificate apns-sim writes once it listens: wait for that first.
for _ in $(seq 1 60); do [ -s "$root/var/herald/apns-sim.ready" ] && break; sleep 0.5; done
[ -s "$root/var/herald/apns-sim.ready" ] || { cat .local/image-apns-sim.log >&2; echo "check-image: apns-sim did not start" >&2; exit 1; }
echo "check-image: apns-sim started in the image: $(cat "$root/var/herald/apns-sim.ready")"
start_in_image .local/image-api.log HERALD_MASTER_KEY_FILE=/run/secrets/herald/master-key \
  HERALD_ADMIN_TOKEN_FILE=/run/secrets/herald/admin-token \
  HERALD_API_PORT=18080 HERALD_API_METRICS_PORT=19467 herald-api
start_in_image .local/image-center.log HERALD_CENTER_METRICS_PORT=19466 herald-center
start_in_image .local/image-sender.log HERALD_MASTER_KEY_FILE=/run/secrets/herald/master-key \
  HERALD_SENDER_METRICS_PORT=19465 \
  HERALD_SENDER_APNS_SANDBOX_HOST=127.0.0.1 HERALD_SENDER_APNS_SANDBOX_PORT=22197 \
  HERALD_SENDER_APNS_SANDBOX_TRUST_CERTIFICATE_FILE=/var/herald/apns-sim.crt herald-sender
# The gateway's TLS identity, mounted like the other secrets (a Secret volume in Kubernetes).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
  -keyout "$root/run/secrets/herald/gateway-tls.key" -out "$root/run/secrets/herald/gateway-tls.crt" 2>/dev/null
chmod "$secret_mode" "$root"/run/secrets/herald/gateway-tls.*
[ -z "$fs_group" ] || { chgrp "$fs_group" "$root"/run/secrets/herald/gateway-tls.*; chmod g+r "$root"/run/secrets/herald/gateway-tls.*; }
start_in_image .local/image-gateway.log HERALD_MASTER_KEY_FILE=/run/secrets/herald/master-key \
  HERALD_GATEWAY_PORT=17443 HERALD_GATEWAY_METRICS_PORT=19468 \
  HERALD_GATEWAY_TLS_CERTIFICATE_FILE=/run/secrets/herald/gateway-tls.crt \
  HERALD_GATEWAY_TLS_KEY_FILE=/run/secrets/herald/gateway-tls.key herald-gateway

ready() {
  local name=$1 url=$2
  for _ in $(seq 1 120); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$url")" = 200 ]; then
      echo "check-image: $name started in the image: $url answers 200"
      return 0
    fi
    sleep 0.5
  done
  echo "check-image: $name did not become ready ($url); its log:" >&2
  tail -5 ".local/image-${name#herald-}.log" >&2
  return 1
}
ready herald-api http://127.0.0.1:19467/readyz
ready herald-center http://127.0.0.1:19466/readyz
ready herald-sender http://127.0.0.1:19465/readyz
ready herald-gateway http://127.0.0.1:19468/readyz
echo "check-image: every binary runs in a minimal bookworm root with the Containerfile's packages"
