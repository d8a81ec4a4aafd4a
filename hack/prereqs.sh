#!/usr/bin/env bash
# Installs what nap's tests need on a fresh Debian machine, and nothing that is already
# there. Idempotent; needs root (or sudo) only when something is missing.
#
#   qemu-user-static  runs the arm64 sleeper (qemu-aarch64-static ./nap 1)
#   elfutils          eu-elflint, which checks the sleepers' ELF headers
#   util-linux        unshare (the PID-namespace test), nsenter (the second node),
#                     losetup and mount (node 2's own file system)
#   e2fsprogs         mkfs.ext4, for node 2's own file system (its eviction threshold)
#   coreutils         chroot, for the empty-root test
#   etcd-server       the store of envtest and of the local cluster
#   containerd, runc, containernetworking-plugins, iptables, conntrack, socat, iproute2
#                     the local cluster's node (see docs/testing.md)
#   procps            pgrep, in the cluster's teardown; sysctl (neigh_gc)
#   openssl, curl     the local cluster's certificates and health checks
#   python3           the benchmark reports
#   chromium          renders napctl probe's HTML report in a test (headless screenshot)
#   haproxy           the lab's load balancer (hack/lb runs one per LoadBalancer Service)
#   dbus-daemon       the bus of node 2's stand-in logind (hack/logind: graceful node
#                     shutdown, never the machine's)
#   skopeo            reads napctl image's layouts in a test, as users push them (local
#                     transports only: oci-archive:, oci:)
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ] || [ -x "${2:-/nonexistent}" ]; }
have qemu-aarch64-static || need+=(qemu-user-static)
have eu-elflint || need+=(elfutils)
have unshare || need+=(util-linux)
have nsenter || need+=(util-linux)
have losetup || need+=(util-linux)
have mkfs.ext4 || need+=(e2fsprogs)
have chroot || need+=(coreutils)
have etcd || need+=(etcd-server)
have containerd || need+=(containerd)
have runc || need+=(runc)
have bridge-cni /usr/lib/cni/bridge || need+=(containernetworking-plugins)
have iptables || need+=(iptables)
have conntrack || need+=(conntrack)
have socat || need+=(socat)
have ip || need+=(iproute2)
have pgrep && have sysctl || need+=(procps)
have openssl || need+=(openssl)
have curl || need+=(curl)
have python3 || need+=(python3)
have chromium || need+=(chromium)
have skopeo || need+=(skopeo)
have haproxy || need+=(haproxy)
have dbus-daemon || need+=(dbus-daemon)

if [ ${#need[@]} -eq 0 ]; then
  echo "prereqs: all present"
  exit 0
fi

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "prereqs: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
