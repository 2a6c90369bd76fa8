//go:build tools

// Package tools pins KEDA's operator for tests/cluster/build.
package tools

import _ "github.com/kedacore/keda/v2/cmd/operator"
