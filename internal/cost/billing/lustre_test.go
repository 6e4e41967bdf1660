package billing

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	cloudbilling "google.golang.org/api/cloudbilling/v1"
	"google.golang.org/api/option"

	"gke-rl/internal/cost"
	"gke-rl/test/golden"
)

// lustreSKUs are Managed Lustre's SKUs in the catalog's shape, with the descriptions and prices
// of a Cloud Billing pricing export (testdata/googleapis/SOURCES.md: assembled, GiBy.mo).
func lustreSKUs(t *testing.T) []*cloudbilling.Sku {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(golden.RepoRoot(), "testdata/googleapis/preflight/cloudbilling-skus-managed-lustre-assembled.json"))
	require.NoError(t, err)
	var page cloudbilling.ListSkusResponse
	require.NoError(t, json.Unmarshal(data, &page))
	return page.Skus
}

func lustre(tier int, region string) Capacity {
	return LustreCapacity(sku(cost.LustreSKU(tier), region), tier)
}

// Each tier takes its own SKU at the export's price: the shipped table's, to the cent.
func TestLustreIsPricedByTierPerGiBMonth(t *testing.T) {
	prices, unknown := PriceCapacity(lustreSKUs(t), []Capacity{lustre(125, "us-central1"), lustre(250, "us-central1"), lustre(500, "us-central1"), lustre(1000, "us-central1")})
	require.Empty(t, unknown)
	require.Len(t, prices, 4)
	for i, want := range []float64{0.145, 0.21, 0.34, 0.60} {
		assert.InDelta(t, want, prices[i].USD, 1e-12, prices[i].Name)
		shipped, ok := cost.Catalog.Lookup(prices[i].SKU)
		require.True(t, ok, prices[i].Name)
		assert.InDelta(t, shipped.USD, prices[i].USD, 1e-12, "the catalog's price is the shipped table's: %s", prices[i].Name)
	}
	assert.Equal(t, `"Managed Lustre Capacity 500-Perf Iowa" at $0.34/GiBy.mo`, prices[2].Basis)
	assert.Equal(t, cost.SKU{Name: "lustre-500", Region: "us-central1"}, prices[2].SKU)
}

// A price per GiB-hour is a month of 730 of them: $0.000465753... × 730 = $0.34.
func TestLustrePerGiBHourIsAMonthOf730Hours(t *testing.T) {
	skus := lustreSKUs(t)
	for _, s := range skus {
		e := s.PricingInfo[0].PricingExpression
		e.UsageUnit = "GiBy.h"
		e.TieredRates[0].UnitPrice.Nanos = 465753 // $0.000465753 a GiB-hour
	}
	prices, unknown := PriceCapacity(skus, []Capacity{lustre(500, "us-central1")})
	require.Empty(t, unknown)
	assert.InDelta(t, 0.000465753*730, prices[0].USD, 1e-12)
	assert.InDelta(t, 0.34, prices[0].USD, 1e-6)
	assert.Equal(t, `"Managed Lustre Capacity 500-Perf Iowa" at $0.000465753/GiBy.h × 730 hours a month`, prices[0].Basis)
}

func TestLustreThatCannotBeStoodBehindStaysUnknown(t *testing.T) {
	skus := lustreSKUs(t)

	// The export has Iowa alone.
	_, unknown := PriceCapacity(skus, []Capacity{lustre(500, "us-east1")})
	require.Len(t, unknown, 1)
	assert.Equal(t, `the catalog has no SKU "Managed Lustre Capacity 500-Perf …" for us-east1`, unknown[0].Reason)

	// A tier the catalog does not sell.
	_, unknown = PriceCapacity(skus, []Capacity{lustre(40, "us-central1")})
	require.Len(t, unknown, 1)
	assert.Equal(t, `the catalog has no SKU "Managed Lustre Capacity 40-Perf …" for us-central1`, unknown[0].Reason)

	// Two SKUs for one tier and region: no guess.
	_, unknown = PriceCapacity(append(skus, skus...), []Capacity{lustre(500, "us-central1")})
	require.Len(t, unknown, 1)
	assert.Equal(t, `2 SKUs could be "Managed Lustre Capacity 500-Perf …" in us-central1 ("Managed Lustre Capacity 500-Perf Iowa", "Managed Lustre Capacity 500-Perf Iowa"): not guessing which`, unknown[0].Reason)

	// A unit that is not capacity over time, a currency other than USD, no price at all.
	for reason, spoil := range map[string]func(*cloudbilling.Sku){
		`"Managed Lustre Capacity 500-Perf Iowa" is priced per "GiBy", and pricing lustre-500 takes GiBy.mo or GiBy.h`: func(s *cloudbilling.Sku) {
			s.PricingInfo[0].PricingExpression.UsageUnit = "GiBy"
		},
		`"Managed Lustre Capacity 500-Perf Iowa" is priced in EUR, not USD`: func(s *cloudbilling.Sku) {
			s.PricingInfo[0].PricingExpression.TieredRates[0].UnitPrice.CurrencyCode = "EUR"
		},
		`"Managed Lustre Capacity 500-Perf Iowa": has no pricing expression`: func(s *cloudbilling.Sku) { s.PricingInfo = nil },
	} {
		skus := lustreSKUs(t)
		for _, s := range skus {
			if s.Description == "Managed Lustre Capacity 500-Perf Iowa" {
				spoil(s)
			}
		}
		_, unknown := PriceCapacity(skus, []Capacity{lustre(500, "us-central1")})
		require.Len(t, unknown, 1)
		assert.Equal(t, reason, unknown[0].Reason)
	}
}

// catalogServices answers services.list with the named pages (the first without a token).
func catalogServices(t *testing.T, pages ...cloudbilling.ListServicesResponse) *cloudbilling.APIService {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/v1/services", r.URL.Path)
		i := 0
		if token := r.URL.Query().Get("pageToken"); token != "" {
			i = int(token[0] - '0')
		}
		page := pages[i]
		if i+1 < len(pages) {
			page.NextPageToken = string(rune('0' + i + 1))
		}
		w.Header().Set("Content-Type", "application/json")
		assert.NoError(t, json.NewEncoder(w).Encode(page))
	}))
	t.Cleanup(srv.Close)
	svc, err := cloudbilling.NewService(context.Background(), option.WithEndpoint(srv.URL), option.WithoutAuthentication(), option.WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	return svc
}

func recordedServices(t *testing.T) cloudbilling.ListServicesResponse {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(golden.RepoRoot(), "testdata/googleapis/preflight/cloudbilling-services-assembled.json"))
	require.NoError(t, err)
	var page cloudbilling.ListServicesResponse
	require.NoError(t, json.Unmarshal(data, &page))
	return page
}

// Managed Lustre's service is found by name on whichever page it is; none, or two, is said.
func TestTheLustreServiceIsFoundByName(t *testing.T) {
	page := recordedServices(t)
	name, err := FindService(context.Background(), catalogServices(t, page), LustreWord)
	require.NoError(t, err)
	assert.Equal(t, "services/0000-0000-1057", name)

	// On a later page, under a longer name, in other letters' case.
	first := cloudbilling.ListServicesResponse{Services: page.Services[:4]}
	later := cloudbilling.ListServicesResponse{Services: []*cloudbilling.Service{{Name: "services/AAAA-BBBB-CCCC", DisplayName: "Google Cloud Managed LUSTRE"}}}
	name, err = FindService(context.Background(), catalogServices(t, first, later), LustreWord)
	require.NoError(t, err)
	assert.Equal(t, "services/AAAA-BBBB-CCCC", name)

	_, err = FindService(context.Background(), catalogServices(t, first), LustreWord)
	assert.EqualError(t, err, `the catalog lists no service named with "Lustre"`)

	two := cloudbilling.ListServicesResponse{Services: append(append([]*cloudbilling.Service{}, page.Services...), later.Services...)}
	_, err = FindService(context.Background(), catalogServices(t, two), LustreWord)
	assert.EqualError(t, err, `2 services of the catalog are named with "Lustre" ("Managed Lustre" (services/0000-0000-1057), "Google Cloud Managed LUSTRE" (services/AAAA-BBBB-CCCC)): not guessing which`)
}
