#!/usr/bin/env bash
# Builds the control-plane binaries Lathe's tests and local clusters need into bin/:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok.
# Each tool module (hack/tools/{kube,etcd,kwok}) is pinned by its go.mod and go.sum; a binary is
# rebuilt only when the checksum of its module's go.mod, go.sum and this script changes.
# The prometheus target (not built by default) takes the binary from Debian's package instead: see
# fetch_prometheus.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/bin"
mkdir -p "$bin/.stamps"
self_sum=$(sha256sum "$0" | cut -c1-16)

# stamp_of prints the checksum that identifies one tool module's pinned versions.
stamp_of() {
	cat "$root/hack/tools/$1/go.mod" "$root/hack/tools/$1/go.sum" | sha256sum | cut -c1-16
}

# build MODULE BINARY PACKAGE [LDFLAGS] builds PACKAGE from MODULE into bin/BINARY unless it is current.
build() {
	local module=$1 name=$2 pkg=$3 ldflags=${4:-}
	local want stamp="$bin/.stamps/$name"
	want="$(stamp_of "$module")-$self_sum"
	if [[ -x "$bin/$name" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		return 0
	fi
	echo "building $name (from hack/tools/$module)" >&2
	(cd "$root/hack/tools/$module" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$bin/$name.tmp" "$pkg")
	mv "$bin/$name.tmp" "$bin/$name"
	echo "$want" >"$stamp"
}

# Prometheus for the dashboard and alert tests: the upstream release is pinned, Debian's revision of it is
# whatever the archive has now (point releases replace 2.42.0+ds-5+b6 with 2.42.0+ds-5+deb12uN).
prometheus_version=2.42.0+ds

# fetch_prometheus downloads Debian's prometheus package without root and without installing it, and
# extracts only /usr/bin/prometheus into bin/ (no configuration, no service). If the machine's package
# lists have no revision of the pinned release, it refreshes a private copy of the lists and tries again.
fetch_prometheus() {
	local want="$prometheus_version-$self_sum" stamp="$bin/.stamps/prometheus"
	if [[ -x "$bin/prometheus" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		return 0
	fi
	echo "fetching prometheus $prometheus_version (Debian's package)" >&2
	local tmp
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # expand $tmp now: it is local
	trap "rm -rf '$tmp'" RETURN
	if ! download_deb "$tmp" prometheus "$prometheus_version"; then
		mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
		local private=(-o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o Debug::NoLocking=1)
		apt-get "${private[@]}" -qq update >&2
		download_deb "$tmp" prometheus "$prometheus_version" "${private[@]}" ||
			{ echo "Debian's package lists have no prometheus $prometheus_version-*" >&2; return 1; }
	fi
	dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -xO ./usr/bin/prometheus >"$bin/prometheus.tmp"
	chmod +x "$bin/prometheus.tmp"
	"$bin/prometheus.tmp" --version 2>&1 | grep -q "version ${prometheus_version%%+*}" ||
		{ echo "bin/prometheus.tmp is not prometheus $prometheus_version" >&2; return 1; }
	mv "$bin/prometheus.tmp" "$bin/prometheus"
	echo "$want" >"$stamp"
}

# download_deb DIR PACKAGE UPSTREAM [APT-OPTIONS] downloads the newest Debian revision of PACKAGE's release
# UPSTREAM that the package lists name into DIR; it fails when they name none.
download_deb() {
	local dir=$1 pkg=$2 upstream=$3
	shift 3
	local version
	version=$(apt-cache "$@" madison "$pkg" | awk -v u="$upstream-" 'index($3, u) == 1 { print $3; exit }')
	[[ -n "$version" ]] || return 1
	(cd "$dir" && apt-get "$@" -qq download "$pkg=$version" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
	compgen -G "$dir/${pkg}_*.deb" >/dev/null
}

kube_version=$(cd "$root/hack/tools/kube" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
major=${kube_version#v}; major=${major%%.*}
minor=${kube_version#v*.}; minor=${minor%%.*}
# Version stamps make the binaries report their real version, as released builds do; clients
# such as kwok and kubectl read it.
kube_ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kube_ldflags+=" -X $p.gitVersion=$kube_version -X $p.gitMajor=$major -X $p.gitMinor=$minor"
	kube_ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

targets=${*:-etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok}
for t in $targets; do
	case $t in
	etcd) build etcd etcd go.etcd.io/etcd/server/v3 ;;
	kube-apiserver | kube-controller-manager | kube-scheduler | kubectl)
		build kube "$t" "k8s.io/kubernetes/cmd/$t" "$kube_ldflags" ;;
	kwok) build kwok kwok sigs.k8s.io/kwok/cmd/kwok ;;
	prometheus) fetch_prometheus ;;
	*) echo "unknown tool $t" >&2; exit 2 ;;
	esac
done
