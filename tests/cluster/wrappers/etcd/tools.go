//go:build tools

// Package tools pins the etcd binaries the local test cluster builds
// (tests/cluster/build); it is never compiled into Pilotlight.
package tools

import _ "go.etcd.io/etcd/server/v3"
