#!/usr/bin/env bash
# Runs every test of the project: unit tests, integration tests against a real etcd + kube-apiserver, and
# end-to-end tests on a local cluster (kube-controller-manager, kube-scheduler, kwok). The control-plane
# binaries and prometheus must be in bin/ (make test-tools puts them there; make test does that first).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export LATHE_BIN_DIR="$root/bin"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kwok prometheus; do
	[[ -x "$LATHE_BIN_DIR/$b" ]] || { echo "bin/$b is missing: run 'make test-tools'" >&2; exit 1; }
done
# -race everywhere: the control-plane binaries run outside the race detector, so it only slows Lathe's code.
go test -race -count=1 -timeout 25m "$@" ./...
