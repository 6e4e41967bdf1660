package infra_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra"
)

func TestLustreTierSizes(t *testing.T) {
	cases := []struct {
		sentence   string
		tier, size int
		fits       bool
		below, abv int
	}{
		{"the 500 tier's minimum fits", 500, 18000, true, 0, 0},
		{"a size between steps does not fit and names both neighbours", 500, 20000, false, 18000, 36000},
		{"a size under the minimum names the minimum", 500, 9000, false, 0, 18000},
		// Above the threshold (3,060,000), multiples of 144,000: the first is 22 × 144,000 =
		// 3,168,000; the threshold plus one large step, 3,204,000, is 22.25 of them.
		{"a multiple of the large step above the limit fits", 500, 3168000, true, 0, 0},
		{"the limit plus a large step is not a multiple of it", 500, 3204000, false, 3168000, 3312000},
		{"a small step above the limit does not fit", 500, 3060000 + 18000, false, 3060000, 3168000},
		{"the threshold itself fits (170 × 18,000)", 500, 3060000, true, 0, 0},
		{"just under the threshold, the threshold is the next size", 500, 3060000 - 1000, false, 3042000, 3060000},
		{"the 500 tier's maximum fits (139 × 144,000)", 500, 20016000, true, 0, 0},
		{"the 1000 tier's maximum fits (139 × 72,000)", 1000, 10008000, true, 0, 0},
		{"the 250 tier's maximum fits (139 × 288,000)", 250, 40032000, true, 0, 0},
		{"the 125 tier's maximum fits (170 × 72,000)", 125, 12240000, true, 0, 0},
		{"one large step short of the maximum", 500, 20016000 - 1000, false, 19872000, 20016000},
		{"a size over the maximum names the maximum", 125, 12312000, false, 12240000, 0},
		{"the 1000 tier steps by 9000", 1000, 27000, true, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			tier, ok := infra.LookupLustreTier(tc.tier)
			require.True(t, ok)
			assert.Equal(t, tc.fits, tier.Fits(tc.size))
			if !tc.fits {
				below, above := tier.Nearest(tc.size)
				assert.Equal(t, tc.below, below)
				assert.Equal(t, tc.abv, above)
			}
		})
	}
}

func TestAggregateThroughput(t *testing.T) {
	tier, _ := infra.LookupLustreTier(500)
	// 18,000 GiB at 500 MB/s per TiB is about 8.8 GB/s, as the NeMo RL guide sizes it.
	assert.InDelta(t, 8789, tier.AggregateMBps(18000), 1)
}

func TestSplitCIDR(t *testing.T) {
	prefixes := func(ps []netip.Prefix) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.String()
		}
		return out
	}
	subnets, err := infra.SplitCIDR(netip.MustParsePrefix("192.168.8.0/21"), 8)
	require.NoError(t, err)
	assert.Equal(t, []string{"192.168.8.0/24", "192.168.9.0/24", "192.168.10.0/24", "192.168.11.0/24",
		"192.168.12.0/24", "192.168.13.0/24", "192.168.14.0/24", "192.168.15.0/24"}, prefixes(subnets))

	three, err := infra.SplitCIDR(netip.MustParsePrefix("10.0.0.0/22"), 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"}, prefixes(three), "rounds up to a power of two")

	one, err := infra.SplitCIDR(netip.MustParsePrefix("10.0.0.0/22"), 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.0/22"}, prefixes(one), "one subnet is the whole block")
	_, err = infra.SplitCIDR(netip.MustParsePrefix("10.0.0.0/22"), 0)
	assert.EqualError(t, err, "cannot split into 0 subnets")

	// GCP's smallest subnet, a /29, at its limit: a /26 holds 8 of them (26 + 3 = 29), a /27
	// does not (27 + 3 = 30).
	eight, err := infra.SplitCIDR(netip.MustParsePrefix("10.0.0.0/26"), 8)
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.56/29", eight[7].String())
	_, err = infra.SplitCIDR(netip.MustParsePrefix("10.0.0.0/27"), 8)
	assert.EqualError(t, err, "is too small for 8 subnets: each would be a /30, and GCP's smallest subnet is a /29")
	assert.Equal(t, 252, infra.UsableAddresses(netip.MustParsePrefix("192.168.8.0/24")))
}
