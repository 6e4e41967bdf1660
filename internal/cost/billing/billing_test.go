package billing

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	cloudbilling "google.golang.org/api/cloudbilling/v1"

	"gke-rl/internal/cost"
	"gke-rl/test/golden"
)

// recorded are the catalog pages preflight's tests replay (testdata/googleapis/SOURCES.md):
// OpenCost's recorded pages (2023: A100, A2, E2 and T2D, some in IDR; 2026-09-22: N4A and N4D
// in Iowa) and the A4, N2 and C4D SKUs sc-crawler's tests hold.
func recorded(t *testing.T) []*cloudbilling.Sku {
	t.Helper()
	var skus []*cloudbilling.Sku
	for _, name := range []string{"page1-opencost-2023", "page2-sc-crawler", "page3-opencost-n4"} {
		data, err := os.ReadFile(filepath.Join(golden.RepoRoot(), "testdata/googleapis/preflight/cloudbilling-skus-"+name+".json"))
		require.NoError(t, err)
		var page cloudbilling.ListSkusResponse
		require.NoError(t, json.Unmarshal(data, &page))
		skus = append(skus, page.Skus...)
	}
	return skus
}

func sku(name, region string) cost.SKU { return cost.SKU{Name: name, Region: region} }

func TestA4IsPricedBySlices(t *testing.T) {
	spot := Machine{SKU: sku("a4-highgpu-8g/spot", "us-central1"), Spot: true, Slice: "A4 Nvidia B200 (1 gpu slice)", Slices: 8}
	prices, unknown := Price(recorded(t), []Machine{spot})
	require.Empty(t, unknown)
	require.Len(t, prices, 1)
	// sc-crawler's expected price of the same machine: 39.6336.
	assert.InDelta(t, 39.6336, prices[0].USD, 1e-9)
	assert.Equal(t, `8 × "Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in Americas" at $4.9542/h`, prices[0].Basis)

	// The spot SKU is categorized OnDemand: an on-demand machine must not take it, and the
	// recorded pages have no on-demand slice.
	onDemand := spot
	onDemand.SKU, onDemand.Spot = sku("a4-highgpu-8g", "us-central1"), false
	_, unknown = Price(recorded(t), []Machine{onDemand})
	require.Len(t, unknown, 1)
	assert.Equal(t, `the catalog has no SKU "A4 Nvidia B200 (1 gpu slice) running in …" for us-central1`, unknown[0].Reason)

	// A region the SKU does not serve.
	elsewhere := spot
	elsewhere.SKU = sku("a4-highgpu-8g/spot", "us-east1")
	_, unknown = Price(recorded(t), []Machine{elsewhere})
	require.Len(t, unknown, 1)
	assert.Contains(t, unknown[0].Reason, "has no SKU \"Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in …\" for us-east1")
}

func TestCPUMachinesArePricedByCoreAndRAM(t *testing.T) {
	prices, unknown := Price(recorded(t), []Machine{
		{SKU: sku("n2-standard-16", "us-central1"), Family: "n2", VCPUs: 16, MemoryMiB: 64 * 1024},
		{SKU: sku("n4d-standard-16", "us-central1"), Family: "n4d", VCPUs: 16, MemoryMiB: 64 * 1024},
	})
	require.Empty(t, unknown)
	require.Len(t, prices, 2)

	// Two sources agree: the N2 rates sc-crawler recorded give the price of the shipped table
	// (Cyclenerd's compilation of the same catalog) to the last digit.
	shipped, ok := cost.Catalog.Lookup(sku("n2-standard-16", "us-central1"))
	require.True(t, ok)
	assert.InDelta(t, shipped.USD, prices[0].USD, 1e-9)
	assert.Equal(t, `16 vCPUs × "N2 Instance Core running in Americas" at $0.031611/h + 64 GiB × "N2 Instance Ram running in Americas" at $0.004237/GiBy.h`, prices[0].Basis)

	// OpenCost's recorded N4D SKUs, with their IDs; the custom and spot ones beside them are
	// not taken.
	assert.InDelta(t, 16*0.02911+64*0.00331, prices[1].USD, 1e-9)
	assert.Contains(t, prices[1].Basis, `"N4D Instance Core running in Iowa" at $0.02911/h (SKU FF75-7D01-4303)`)
	assert.Contains(t, prices[1].Basis, `"N4D Instance Ram running in Iowa" at $0.00331/GiBy.h (SKU 19B3-529B-52CC)`)
}

// Some families bill memory per decimal GB; sc-crawler's test prices c4d-standard-8 (31 GiB) so.
func TestMemoryPerDecimalGB(t *testing.T) {
	prices, unknown := Price(recorded(t), []Machine{{SKU: sku("c4d-standard-8", "us-central1"), Family: "c4d", VCPUs: 8, MemoryMiB: 31 * 1024}})
	require.Empty(t, unknown)
	assert.InDelta(t, 8*0.0327035+31*(1<<30)/1e9*0.003495578, prices[0].USD, 1e-9)
}

func TestWhatCannotBeStoodBehindStaysUnknown(t *testing.T) {
	skus := recorded(t)
	_, unknown := Price(skus, []Machine{
		// OpenCost's 2023 page: E2 in IDR.
		{SKU: sku("e2-standard-16", "us-east1"), Family: "e2", VCPUs: 16, MemoryMiB: 64 * 1024},
		// A family the catalog pages do not hold.
		{SKU: sku("c3-standard-8", "us-central1"), Family: "c3", VCPUs: 8, MemoryMiB: 32 * 1024},
	})
	require.Len(t, unknown, 2)
	assert.Equal(t, `"E2 Instance Core running in Americas" is priced in IDR, not USD`, unknown[0].Reason)
	assert.Equal(t, `the catalog has no SKU "C3 Instance Core running in …" for us-central1`, unknown[1].Reason)

	// The same SKU twice (a catalog answering one twice, or two that match): no guess.
	_, unknown = Price(append(skus, skus...), []Machine{{SKU: sku("n2-standard-16", "us-central1"), Family: "n2", VCPUs: 16, MemoryMiB: 64 * 1024}})
	require.Len(t, unknown, 1)
	assert.Contains(t, unknown[0].Reason, `2 SKUs could be "N2 Instance Core running in …" in us-central1`)
	assert.Contains(t, unknown[0].Reason, "not guessing which")

	// A SKU in another unit than the rule's.
	wrongUnit := *skus[len(skus)-1]
	wrongUnit.Description = "N9 Instance Core running in Iowa"
	_, unknown = Price([]*cloudbilling.Sku{&wrongUnit}, []Machine{{SKU: sku("n9-standard-8", "us-central1"), Family: "n9", VCPUs: 8, MemoryMiB: 32 * 1024}})
	require.Len(t, unknown, 1)
	assert.Equal(t, `"N9 Instance Core running in Iowa" is priced per "GiBy.h", and pricing n9-standard-8 takes h`, unknown[0].Reason)
}

// Some AMD families carry the vendor in their SKUs: OpenCost's recorded T2D SKUs of Singapore
// ("T2D AMD Instance Core running in Singapore") are found, and refused for their currency.
func TestAMDFamiliesNameTheVendor(t *testing.T) {
	_, unknown := Price(recorded(t), []Machine{{SKU: sku("t2d-standard-8", "asia-southeast1"), Family: "t2d", VCPUs: 8, MemoryMiB: 32 * 1024}})
	require.Len(t, unknown, 1)
	assert.Equal(t, `"T2D AMD Instance Core running in Singapore" is priced in IDR, not USD`, unknown[0].Reason)
}

// A SKU without a price to read is not priced: no pricing expression, or no tier from the first
// unit (the recorded N2 core SKU, emptied).
func TestSKUWithoutAListPrice(t *testing.T) {
	n2 := Machine{SKU: sku("n2-standard-16", "us-central1"), Family: "n2", VCPUs: 16, MemoryMiB: 64 * 1024}
	for reason, emptied := range map[string]func(*cloudbilling.Sku){
		"has no pricing expression":       func(s *cloudbilling.Sku) { s.PricingInfo = nil },
		"has no tier from the first unit": func(s *cloudbilling.Sku) { s.PricingInfo[0].PricingExpression.TieredRates = nil },
	} {
		skus := recorded(t)
		for _, s := range skus {
			if s.Description == "N2 Instance Core running in Americas" {
				emptied(s)
			}
		}
		_, unknown := Price(skus, []Machine{n2})
		require.Len(t, unknown, 1)
		assert.Equal(t, `"N2 Instance Core running in Americas": `+reason, unknown[0].Reason)
	}
}
