package infra

import (
	"fmt"
	"net/netip"
	"strings"
)

// The shipped stack files hold placeholders where only the user knows the value: the project,
// the workstation's address, the reservation. The offline plan shows them (a warning naming the
// command that sets each), so that `go run . plan` works on a fresh clone; `pulumi preview` and
// `pulumi up` refuse them before any resource is registered, instead of failing 20 to 40 minutes
// into an `up` (a project that does not exist at the first API call, a reservation that does
// not exist at the GPU pool, after the cluster's 10 to 25 minutes).

// placeholderPrefix starts every shipped placeholder name (your-project-id, your-h200-reservation).
const placeholderPrefix = "your-"

// ShippedAuthorizedNetwork is the shipped stacks' placeholder of cluster.authorizedNetworks[0].
const ShippedAuthorizedNetwork = "203.0.113.7/32"

// documentationRanges are the IPv4 ranges reserved for documentation (RFC 5737), never routed:
// an authorized network in one of them admits nobody.
var documentationRanges = []netip.Prefix{
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
}

// placeholders are the stack's values that are still the shipped placeholders, each as
// `key: message` with the command that sets it.
func placeholders(c *Config) Errors {
	var found Errors
	if strings.HasPrefix(c.Project, placeholderPrefix) {
		found.Add(KeyGCPProject, "%s is the shipped placeholder; set your project: pulumi config set gcp:project <project-id> (`gcloud projects list` lists yours)", quote(c.Project))
	}
	for i, cidr := range c.Cluster.AuthorizedNetworks {
		prefix, err := netip.ParsePrefix(cidr)
		if err != nil {
			continue // validate names a malformed one
		}
		for _, doc := range documentationRanges {
			if doc.Overlaps(prefix) {
				what := "a documentation address (RFC 5737)"
				if cidr == ShippedAuthorizedNetwork {
					what = "the shipped placeholder, " + what
				}
				found.Add(fmt.Sprintf("cluster.authorizedNetworks[%d]", i), "%s is %s that admits nobody to the cluster's API; set your workstation's: pulumi config set --path 'cluster.authorizedNetworks[%d]' \"$(curl -4 -s ifconfig.me)/32\"", cidr, what, i)
				break
			}
		}
	}
	if strings.HasPrefix(c.GPU.Reservation, placeholderPrefix) {
		found.Add("gpu.reservation", "%s is the shipped placeholder; set your reservation's name: pulumi config set --path gpu.reservation <name> (`gcloud compute reservations list --project <project-id>` lists them, with their zones)", quote(c.GPU.Reservation))
	}
	return found
}

// PlaceholderError refuses a stack that still holds placeholders: `pulumi preview` and
// `pulumi up` would talk to a project, an address or a reservation that is not the user's.
type PlaceholderError struct{ Placeholders Errors }

func (e *PlaceholderError) Error() string {
	lines := make([]string, len(e.Placeholders))
	for i, p := range e.Placeholders {
		lines[i] = p.Error()
	}
	return "the stack still holds the shipped placeholders (`go run . plan` shows them; `pulumi preview` and `pulumi up` refuse them):\n" + strings.Join(lines, "\n")
}
