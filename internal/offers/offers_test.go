package offers

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryZoneIsInARegionTheRegionListNamesOrIsAWarning(t *testing.T) {
	for name, o := range table {
		require.NotEmpty(t, o.Regions, name)
		require.NotEmpty(t, o.Zones, name)
		for _, z := range o.Zones {
			region := z[:strings.LastIndex(z, "-")]
			assert.Contains(t, o.Regions, region, "%s: zone %s is in a region the newer region list does not name", name, z)
		}
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name, machine, region, zone string
		refusal, warning            []string
	}{
		{name: "shipped b200 zone", machine: "a4-highgpu-8g", region: "us-east1", zone: "us-east1-b"},
		{name: "shipped h200 zone", machine: "a3-ultragpu-8g", region: "us-south1", zone: "us-south1-b"},
		{name: "B200 in a region without A4", machine: "a4-highgpu-8g", region: "europe-west2", zone: "europe-west2-a",
			refusal: []string{`"europe-west2-a": a4-highgpu-8g is not offered in europe-west2`, "list, 2026-08-17",
				"zones that offer it: asia-northeast1-b, asia-southeast1-b, europe-north1-b, europe-west4-b, us-central1-b, us-east1-b",
				"gcloud compute machine-types describe a4-highgpu-8g --zone europe-west2-a"}},
		{name: "H200 where only A4 is", machine: "a3-ultragpu-8g", region: "us-east1", zone: "us-east1-b",
			refusal: []string{"a3-ultragpu-8g is not offered in us-east1", "us-south1-b"}},
		{name: "a zone that does not exist", machine: "a4-highgpu-8g", region: "us-east4", zone: "us-east4-z",
			refusal: []string{`"us-east4-z" does not offer a4-highgpu-8g; in us-east4 it is offered in us-east4-b`}},
		{name: "another zone of a region with A4", machine: "a4-highgpu-8g", region: "us-west3", zone: "us-west3-a",
			refusal: []string{"in us-west3 it is offered in us-west3-b, us-west3-c"}},
		{name: "region newer than the zone list", machine: "a4-highgpu-8g", region: "europe-west1", zone: "europe-west1-b",
			warning: []string{"a4-highgpu-8g is offered in europe-west1", "names no zone of it", `"europe-west1-b" is unchecked`}},
		{name: "machine type without a record", machine: "a5-future-8g", region: "us-east1", zone: "us-east1-b",
			warning: []string{"no record of where a5-future-8g is offered"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.machine, tc.region, tc.zone)
			assertMentions(t, v.Refusal, tc.refusal)
			assertMentions(t, v.Warning, tc.warning)
		})
	}
}

func assertMentions(t *testing.T, got string, want []string) {
	t.Helper()
	if len(want) == 0 {
		assert.Empty(t, got)
		return
	}
	for _, w := range want {
		assert.Contains(t, got, w)
	}
}

func TestZonesInARegionAreNotThoseOfALongerName(t *testing.T) {
	assert.Equal(t, []string{"us-east1-b"}, zonesIn([]string{"us-east1-b", "us-east10-a"}, "us-east1"))
}
