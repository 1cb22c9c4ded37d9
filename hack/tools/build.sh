#!/usr/bin/env bash
# Builds the control-plane binaries Lathe's tests and local clusters need into bin/:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok.
# Each tool module (hack/tools/{kube,etcd,kwok}) is pinned by its go.mod and go.sum; a binary is
# rebuilt only when the checksum of its module's go.mod, go.sum and this script changes.
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
	*) echo "unknown tool $t" >&2; exit 2 ;;
	esac
done
