//go:build tools

// Package tools pins the helm binary the chart tests use
// (tests/cluster/build); it is never compiled into Pilotlight.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
