# Lathe: a Karpenter-compatible node autoscaler. See README.md.
SHELL := /usr/bin/env bash
GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
CRD_DIR := pkg/apis/crds

.PHONY: all
all: generate build

## generate: regenerate deepcopy functions and CRD manifests from the API types.
.PHONY: generate
generate:
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./pkg/apis/...
	rm -f $(CRD_DIR)/*.yaml
	$(CONTROLLER_GEN) crd:allowDangerousTypes=false paths=./pkg/apis/... output:crd:artifacts:config=$(CRD_DIR)
	$(GO) run ./hack/crdpatch $(CRD_DIR)

## verify-generate: fail if generated files are not current.
.PHONY: verify-generate
verify-generate: generate
	@test -z "$$(git status --porcelain -- $(CRD_DIR) ':(glob)**/zz_generated.*.go')" || { git status --porcelain -- $(CRD_DIR) ':(glob)**/zz_generated.*.go'; echo "generated files are stale: run 'make generate' and commit the result" >&2; exit 1; }

## tools: build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok into bin/.
.PHONY: tools
tools:
	hack/tools/build.sh

## build: build the lathe binary and the lean lathe-simulate (`lathe simulate` without the operator) into bin/.
.PHONY: build
build:
	$(GO) build -o bin/lathe ./cmd/lathe
	$(GO) build -o bin/lathe-simulate ./cmd/lathe-simulate

## test-tools: build the binaries the tests run (everything but kubectl, which only people use), and fetch prometheus.
.PHONY: test-tools
test-tools:
	hack/tools/build.sh etcd kube-apiserver kube-controller-manager kube-scheduler kwok prometheus

## test: build what the tests need, then run every test.
.PHONY: test
test: test-tools
	hack/test.sh

## run: start a local cluster with the simulated provider (PROVIDER=aws: the AWS provider against a fake AWS) and run Lathe on it until Ctrl-C.
PROVIDER ?= sim
.PHONY: run
run: tools build
	$(GO) build -o bin/lathe-local ./cmd/lathe-local
	bin/lathe-local -provider $(PROVIDER)

.PHONY: vet
vet:
	$(GO) vet ./...
