package cluster_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/cluster"
)

func TestMirrorOfTheFrameworkImages(t *testing.T) {
	cases := []struct {
		image, upstream, mirrored string
	}{
		{"nvcr.io/nvidia/nemo-rl:v0.5.0", cluster.UpstreamNVCR, "us-east1-docker.pkg.dev/p/rl-nvcr/nvidia/nemo-rl:v0.5.0"},
		{"verlai/verl:vllm011.dev7", cluster.UpstreamDockerHub, "us-east1-docker.pkg.dev/p/rl-docker-hub/verlai/verl:vllm011.dev7"},
		{"docker.io/verlai/verl@sha256:0123", cluster.UpstreamDockerHub, "us-east1-docker.pkg.dev/p/rl-docker-hub/verlai/verl@sha256:0123"},
		{"ubuntu:24.04", cluster.UpstreamDockerHub, "us-east1-docker.pkg.dev/p/rl-docker-hub/library/ubuntu:24.04"},
		{"docker.io/ubuntu:24.04", cluster.UpstreamDockerHub, "us-east1-docker.pkg.dev/p/rl-docker-hub/library/ubuntu:24.04"},
	}
	for _, tc := range cases {
		m, ok := cluster.MirrorOf(tc.image, "p", "us-east1", "rl")
		assert.True(t, ok, tc.image)
		assert.Equal(t, tc.upstream, m.Upstream, tc.image)
		assert.Equal(t, "rl-"+tc.upstream, m.RepositoryID, tc.image)
		assert.Equal(t, tc.mirrored, m.Image, tc.image)
	}
	for _, asIs := range []string{
		"us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:v1.1.1",
		"ghcr.io/acme/rl:1", "quay.io/acme/rl:1", "localhost/rl:1", "registry.example.com:5000/rl:1",
	} {
		_, ok := cluster.MirrorOf(asIs, "p", "us-east1", "rl")
		assert.False(t, ok, asIs)
	}
}
