// Package naming derives deterministic GCP and Kubernetes resource names within their length limits.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// Name length limits that GCP and Kubernetes enforce.
const (
	// MaxClusterNameLength is GKE's limit on cluster names.
	MaxClusterNameLength = 40
	// MaxNodePoolNameLength is GKE's limit on node pool names, as on cluster names.
	MaxNodePoolNameLength = 40
	// MaxResourceNameLength is the RFC 1035 limit that most GCP resource names share.
	MaxResourceNameLength = 63
)

var dnsLabel = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// IsDNSLabel reports whether s is a lowercase RFC 1035 label (letters, digits, hyphens; starts
// with a letter, does not end with a hyphen), which GCP requires of most resource names.
func IsDNSLabel(s string) bool {
	return dnsLabel.MatchString(s)
}

// Namer derives deterministic resource names from a stack's prefix (the cluster name).
// The same inputs always give the same name, so that `pulumi up` never replaces a resource
// because of its name.
type Namer struct {
	prefix string
}

// NewNamer returns a Namer for the given prefix, normally the validated `cluster.name`.
func New(prefix string) Namer {
	return Namer{prefix: prefix}
}

// Name joins the prefix and parts with hyphens and keeps the result within maxLen characters.
// A name that would be longer is cut and given a 6-character hash of the whole name, so that two
// long names that share a beginning stay distinct.
func (n Namer) Name(maxLen int, parts ...string) string {
	full := strings.Join(append([]string{n.prefix}, parts...), "-")
	if len(full) <= maxLen {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	suffix := hex.EncodeToString(sum[:])[:6]
	head := strings.TrimRight(full[:maxLen-len(suffix)-1], "-")
	return head + "-" + suffix
}

// Resource returns a name within GCP's 63-character limit.
func (n Namer) Resource(parts ...string) string {
	return n.Name(MaxResourceNameLength, parts...)
}
