//go:build tools

// Package tools pins the kubernetes binaries the local test cluster builds
// (tests/cluster/build); it is never compiled into Pilotlight.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
