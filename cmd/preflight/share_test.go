package preflight

import (
	"testing"

	"github.com/stretchr/testify/assert"
	compute "google.golang.org/api/compute/v1"
)

// Whom a reservation of another project is shared with, by the ShareSettings forms Compute Engine
// returns: the organization, projects by ID (the map's key and its projectId), or by number
// (Terraform's google_compute_reservation documents the map as keyed by project number), which
// preflight cannot compare and takes as shared; a local reservation is shared with nobody.
func TestSharedWith(t *testing.T) {
	for name, tc := range map[string]struct {
		settings *compute.ShareSettings
		want     bool
	}{
		"no share settings":   {nil, false},
		"local":               {&compute.ShareSettings{ShareType: "LOCAL"}, false},
		"the organization":    {&compute.ShareSettings{ShareType: "ORGANIZATION"}, true},
		"this project by ID":  {&compute.ShareSettings{ShareType: "SPECIFIC_PROJECTS", ProjectMap: map[string]compute.ShareSettingsProjectConfig{"acme-rl": {ProjectId: "acme-rl"}}}, true},
		"another project":     {&compute.ShareSettings{ShareType: "SPECIFIC_PROJECTS", ProjectMap: map[string]compute.ShareSettingsProjectConfig{"other-rl": {ProjectId: "other-rl"}}}, false},
		"a project by number": {&compute.ShareSettings{ShareType: "SPECIFIC_PROJECTS", ProjectMap: map[string]compute.ShareSettingsProjectConfig{"123456789012": {}}}, true},
	} {
		assert.Equal(t, tc.want, sharedWith(&compute.Reservation{ShareSettings: tc.settings}, "acme-rl"), name)
	}
	assert.Equal(t, "SPECIFIC_PROJECTS a-rl, b-rl", shareText(&compute.ShareSettings{ShareType: "SPECIFIC_PROJECTS",
		ProjectMap: map[string]compute.ShareSettingsProjectConfig{"b-rl": {}, "a-rl": {}}}))
	assert.Equal(t, "none", shareText(nil))
}
