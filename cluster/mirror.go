package cluster

import (
	"fmt"
	"strings"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/artifactregistry"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// ImageMirror is an Artifact Registry remote repository in the cluster's region that caches
// the framework image from its public registry. Nodes then pull from Google's network, not
// through the cluster's one NAT address (Docker Hub limits anonymous pulls per address, and every
// new spot node pulls tens of GB), the first pull fills the cache for every later node and
// retry, and image streaming applies (GKE streams images from standard and remote Artifact
// Registry repositories: kubernetes-engine/docs/how-to/image-streaming, Requirements).
type ImageMirror struct {
	// RepositoryID is the repository's ID: <cluster name>-<upstream>.
	RepositoryID string
	// Upstream is the registry it mirrors: "docker-hub" or "nvcr".
	Upstream string
	// Image is the image as nodes pull it: <region>-docker.pkg.dev/<project>/<repository>/<path>.
	Image string
}

// Mirrored registries: Docker Hub through Artifact Registry's preset, NVIDIA's NGC (nvcr.io)
// through a remote repository of any registry URI (terraform-provider-google-beta v6.49.2
// resource_artifact_registry_repository.go: remote_repository_config.common_repository.uri, "URI
// to the registry, e.g. https://registry-1.docker.io"; docker_repository.custom_repository is
// deprecated in its favour).
const (
	UpstreamDockerHub = "docker-hub"
	UpstreamNVCR      = "nvcr"
	// NVCRURI is NGC's registry; its public images need no credentials.
	NVCRURI = "https://nvcr.io"
)

// MirrorOf is the mirror of an image from Docker Hub or nvcr.io, false for any other registry
// (an Artifact Registry image, ghcr.io, quay.io...), which nodes pull as it is.
func MirrorOf(image, project, region, clusterName string) (ImageMirror, bool) {
	upstream, path := "", ""
	first, rest, hasSlash := strings.Cut(image, "/")
	switch {
	case first == "nvcr.io" && hasSlash:
		upstream, path = UpstreamNVCR, rest
	case first == "docker.io" || first == "registry-1.docker.io" || first == "index.docker.io":
		upstream, path = UpstreamDockerHub, rest
	case !hasSlash:
		// "ubuntu:24.04": an official image of Docker Hub.
		upstream, path = UpstreamDockerHub, "library/"+image
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		// "verlai/verl:tag": Docker Hub's default registry (a first component without a dot
		// or a port is a Docker Hub namespace).
		upstream, path = UpstreamDockerHub, image
	default:
		return ImageMirror{}, false
	}
	if upstream == UpstreamDockerHub && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	id := clusterName + "-" + upstream
	return ImageMirror{
		RepositoryID: id,
		Upstream:     upstream,
		Image:        fmt.Sprintf("%s-docker.pkg.dev/%s/%s/%s", region, project, id, path),
	}, true
}

// mirrorArgs is the remote repository of a mirror. The nodes' service account reads it with the
// project role roles/artifactregistry.reader (NodeRoles); Artifact Registry fetches a missing
// image from the upstream on the first pull.
func mirrorArgs(spec *Spec, m ImageMirror) *artifactregistry.RepositoryArgs {
	source := "NVIDIA NGC (nvcr.io)"
	remote := &artifactregistry.RepositoryRemoteRepositoryConfigArgs{
		Description: pulumi.String(source),
		CommonRepository: &artifactregistry.RepositoryRemoteRepositoryConfigCommonRepositoryArgs{
			Uri: pulumi.String(NVCRURI),
		},
	}
	if m.Upstream == UpstreamDockerHub {
		source = "Docker Hub"
		remote = &artifactregistry.RepositoryRemoteRepositoryConfigArgs{
			Description: pulumi.String(source),
			DockerRepository: &artifactregistry.RepositoryRemoteRepositoryConfigDockerRepositoryArgs{
				PublicRepository: pulumi.String("DOCKER_HUB"),
			},
		}
	}
	return &artifactregistry.RepositoryArgs{
		Project:                pulumi.String(spec.Project),
		Location:               pulumi.String(spec.Region),
		RepositoryId:           pulumi.String(m.RepositoryID),
		Format:                 pulumi.String("DOCKER"),
		Mode:                   pulumi.String("REMOTE_REPOSITORY"),
		Description:            pulumi.String(fmt.Sprintf("gke-rl %s: the framework image, cached from %s", spec.Name, source)),
		RemoteRepositoryConfig: remote,
	}
}
