# Lathe: a Karpenter-compatible node autoscaler. See README.md.
SHELL := /usr/bin/env bash
GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
CRD_DIR := pkg/apis/crds
# The chart ships the CRDs in crds/ (installed once by helm install) and the CRD chart as templates.
CHART_CRD_DIRS := charts/lathe/crds charts/lathe-crd/templates

# Release stamping (docs/release.md): the VERSION file, the commit, and the commit time as the date of every
# file in the image (SOURCE_DATE_EPOCH overrides it), so a commit always builds the same image.
VERSION := $(shell cat VERSION)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
IMAGE_REPO ?= ghcr.io/lathe-autoscaler/lathe
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: all
all: generate build

## generate: regenerate deepcopy functions and CRD manifests from the API types, copy the CRDs into the charts, and
## write docs/settings.md and docs/metrics.{txt,md} from the code.
.PHONY: generate
generate:
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./pkg/apis/...
	rm -f $(CRD_DIR)/*.yaml
	$(CONTROLLER_GEN) crd:allowDangerousTypes=false paths=./pkg/apis/... output:crd:artifacts:config=$(CRD_DIR)
	$(GO) run ./hack/crdpatch $(CRD_DIR)
	rm -f $(CHART_CRD_DIRS:%=%/*.yaml)
	cp $(CRD_DIR)/*.yaml charts/lathe/crds/
	for f in $(CRD_DIR)/*.yaml; do hack/crd-template.sh < $$f > charts/lathe-crd/templates/$$(basename $$f); done
	$(GO) run ./hack/settingsdoc docs/settings.md
	$(GO) run ./hack/metricsdoc -dir docs

## verify-generate: fail if generated files are not current.
GENERATED := $(CRD_DIR) $(CHART_CRD_DIRS) ':(glob)**/zz_generated.*.go' docs/settings.md docs/metrics.txt docs/metrics.md
.PHONY: verify-generate
verify-generate: generate
	@test -z "$$(git status --porcelain -- $(GENERATED))" || { git status --porcelain -- $(GENERATED); echo "generated files are stale: run 'make generate' and commit the result" >&2; exit 1; }

## tools: build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok into bin/.
.PHONY: tools
tools:
	hack/tools/build.sh

## build: build the lathe binary (version and commit stamped: lathe --version), the lean lathe-simulate (`lathe simulate` without the operator) and karpenter-convert into bin/.
.PHONY: build
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/lathe ./cmd/lathe
	$(GO) build -o bin/lathe-simulate ./cmd/lathe-simulate
	$(GO) build -o bin/karpenter-convert ./cmd/karpenter-convert

## release: build the linux/amd64+arm64 image (dist/image/, dist/lathe-image.tar), the chart and the CRD chart into dist/ (docs/release.md).
.PHONY: release
release:
	@test -n "$(COMMIT)" -a -n "$(SOURCE_DATE_EPOCH)" || { echo "release: not a git checkout; set COMMIT and SOURCE_DATE_EPOCH" >&2; exit 1; }
	$(GO) run ./hack/release -version $(VERSION) -commit $(COMMIT) -source-date-epoch $(SOURCE_DATE_EPOCH) \
		-image $(IMAGE_REPO) -chart charts/lathe -crd-chart charts/lathe-crd -out dist

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
