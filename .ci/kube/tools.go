//go:build tools

// Package tools pins the Kubernetes control plane that the harness tests (test/kubetest) run
// the stacks' objects on: kube-apiserver, kube-controller-manager and kube-scheduler of
// k8s.io/kubernetes v1.35.4, the GKE minor version new clusters get (cluster/support.go), and
// the etcd server that version requires (3.6.5). It is
// a module of its own because k8s.io/kubernetes replaces its 31 staging modules with ./staging
// paths, which a dependent module must replace again with their published versions (v0.35.4),
// and so that the program's go.mod stays as it is. `.ci/kube/build DIR` builds the binaries,
// with kwok v0.8.0 for the simulated nodes.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"

	_ "go.etcd.io/etcd/server/v3"
)
