//go:build tools

// Package tools pins the kwok binary the local test cluster builds
// (tests/cluster/build); it is never compiled into Pilotlight.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
