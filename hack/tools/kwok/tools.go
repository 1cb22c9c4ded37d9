//go:build tools

// Package kwok pins the kwok command built by hack/tools/build.sh.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
