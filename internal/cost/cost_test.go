package cost

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testSource = &Source{Date: "2026-07-30", Name: "test list"}

func table(prices map[SKU]float64) Table {
	t := Table{Prices: map[SKU]Price{}}
	for k, v := range prices {
		t.Prices[k] = Price{USD: v, Source: testSource}
	}
	return t
}

func TestAMachineBillsItsHourlyPriceAnHourAnd730HoursAMonth(t *testing.T) {
	n2 := SKU{Name: "n2-standard-16", Region: "us-east1"}
	bill := Bill{Lines: []Line{{Item: "CPU nodes", SKU: n2, Unit: PerHour, Training: 2, Idle: 1}}}
	e := bill.Price(table(map[SKU]float64{n2: 0.5}))
	require.Len(t, e.Lines, 1)
	assert.Equal(t, Amount{USD: 1, Known: true}, e.Lines[0].TrainingPerHour)
	assert.Equal(t, Amount{USD: 365, Known: true}, e.Lines[0].IdlePerMonth)
	assert.True(t, e.TrainingPerHour.Complete())
	assert.Equal(t, []Source{*testSource}, e.Sources)
}

func TestStorageBillsItsMonthlyPriceAMonthAndA730thOfItAnHour(t *testing.T) {
	gcs := SKU{Name: "gcs-standard", Region: "us-east1"}
	bill := Bill{Lines: []Line{{Item: "Bucket", SKU: gcs, Unit: PerGiBMonth, Training: 730, Idle: 730}}}
	e := bill.Price(table(map[SKU]float64{gcs: 0.02}))
	assert.InDelta(t, 0.02, e.TrainingPerHour.KnownUSD, 1e-9)
	assert.InDelta(t, 14.6, e.IdlePerMonth.KnownUSD, 1e-9)
}

func TestAMissingPriceIsUnknownNeverZeroUnlessNothingBills(t *testing.T) {
	gpu := SKU{Name: "a4-highgpu-8g/spot", Region: "us-east1"}
	bill := Bill{Lines: []Line{{Item: "GPU nodes", SKU: gpu, Unit: PerHour, Training: 8, Idle: 0}}}
	e := bill.Price(Table{})
	assert.Nil(t, e.Lines[0].Price)
	assert.False(t, e.Lines[0].TrainingPerHour.Known)
	assert.Equal(t, []string{"GPU nodes"}, e.TrainingPerHour.Unknown)
	// A pool scaled to zero costs nothing, whatever its price.
	assert.Equal(t, Amount{Known: true}, e.Lines[0].IdlePerMonth)
	assert.True(t, e.IdlePerMonth.Complete())
	assert.Empty(t, e.Sources)
}

func TestAnUnknownQuantityIsUnknownEvenWithAPrice(t *testing.T) {
	gcs := SKU{Name: "gcs-standard", Region: "us-east1"}
	bill := Bill{Lines: []Line{{Item: "Bucket", SKU: gcs, Unit: PerGiBMonth, UnknownQuantity: true}}}
	e := bill.Price(table(map[SKU]float64{gcs: 0.02}))
	assert.False(t, e.Lines[0].IdlePerMonth.Known)
	assert.Equal(t, []string{"Bucket"}, e.IdlePerMonth.Unknown)
}

func TestTotalsSayWhatTheyLack(t *testing.T) {
	assert.Equal(t, "$1,234.57", Total{KnownUSD: 1234.567}.String())
	assert.Equal(t, "unknown: no price for GPU nodes, Lustre instance (plan --prices FILE adds them); the rest: $0.82",
		Total{KnownUSD: 0.8215, Unknown: []string{"GPU nodes", "Lustre instance"}}.String())
	assert.Equal(t, "unknown (GPU nodes)", Total{Unknown: []string{"GPU nodes"}}.String())
	assert.Equal(t, "unknown", Amount{}.String())
	assert.Equal(t, "$0.00", Amount{Known: true}.String())
	assert.Equal(t, "$1,000,000.00", Dollars(1e6))
	assert.Equal(t, "$999.99", Dollars(999.99))
}

func TestWithAddsAndReplacesPrices(t *testing.T) {
	a := SKU{Name: "n2-standard-16", Region: "us-east1"}
	b := SKU{Name: "gke-cluster", Region: "us-east1"}
	base := table(map[SKU]float64{a: 0.5})
	mine := &Source{Date: "2026-11-30", Name: "mine"}
	merged := base.With(Table{Prices: map[SKU]Price{a: {USD: 0.4, Source: mine}, b: {USD: 0.1, Source: mine}}})
	got, _ := merged.Lookup(a)
	assert.Equal(t, 0.4, got.USD)
	assert.Equal(t, mine, got.Source)
	_, ok := merged.Lookup(b)
	assert.True(t, ok)
	// The shipped table is left as it was.
	got, _ = base.Lookup(a)
	assert.Equal(t, 0.5, got.USD)
}

func TestParseFile(t *testing.T) {
	good := `{"date": "2026-11-30", "source": "billing console", "prices": [{"sku": "a4-highgpu-8g/spot", "region": "us-east1", "usd": 30.5}]}`
	tab, err := ParseFile("p.json", []byte(good))
	require.NoError(t, err)
	p, ok := tab.Lookup(SKU{Name: "a4-highgpu-8g/spot", Region: "us-east1"})
	require.True(t, ok)
	assert.Equal(t, 30.5, p.USD)
	assert.Equal(t, Source{Date: "2026-11-30", Name: "billing console"}, *p.Source)

	for name, tc := range map[string]struct{ file, want string }{
		"no date":                          {`{"source": "x", "prices": []}`, `p.json: date "": want the day the prices were read, as YYYY-MM-DD`},
		"bad date":                         {`{"date": "30/11/2026", "source": "x", "prices": []}`, `date "30/11/2026"`},
		"no source":                        {`{"date": "2026-11-30", "prices": []}`, `source is empty`},
		"zero price":                       {`{"date": "2026-11-30", "source": "x", "prices": [{"sku": "a", "region": "r", "usd": 0}]}`, `prices[0]: want a sku, a region and a usd above 0`},
		"no region":                        {`{"date": "2026-11-30", "source": "x", "prices": [{"sku": "a", "usd": 1}]}`, `prices[0]`},
		"twice":                            {`{"date": "2026-11-30", "source": "x", "prices": [{"sku": "a", "region": "r", "usd": 1}, {"sku": "a", "region": "r", "usd": 2}]}`, `prices[1]: a in r is priced twice`},
		"unknown field":                    {`{"date": "2026-11-30", "source": "x", "prices": [{"sku": "a", "region": "r", "usd": 1, "per": "hour"}]}`, `unknown field "per"`},
		"not json":                         {`date: 2026-11-30`, `p.json: invalid character`},
		"a negative price":                 {`{"date": "2026-11-30", "source": "x", "prices": [{"sku": "a", "region": "r", "usd": -3}]}`, `prices[0]: want a sku, a region and a usd above 0, got sku "a", region "r", usd -3`},
		"an escape sequence in the source": {`{"date": "2026-11-30", "source": "x\u001b[2J", "prices": []}`, `source: "x\x1b[2J" holds a control character at byte 1`},
		"a carriage return in a sku":       {`{"date": "2026-11-30", "source": "x", "prices": [{"sku": "a\rb", "region": "r", "usd": 1}]}`, `prices[0].sku: "a\rb" holds a control character`},
		"an escape sequence in a basis":    {`{"date": "2026-11-30", "source": "x", "prices": [{"sku": "a", "region": "r", "usd": 1, "basis": "\u001b]0;owned\u0007"}]}`, `prices[0].basis:`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseFile("p.json", []byte(tc.file))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestTheCatalogIsDatedAndHasOnlyPositivePrices(t *testing.T) {
	require.NotEmpty(t, Catalog.Prices)
	for sku, p := range Catalog.Prices {
		assert.Greater(t, p.USD, 0.0, sku.String())
		want := &CatalogSource
		switch {
		case sku.Name == "gke-cluster":
			want = &FeeSource
		case strings.HasPrefix(sku.Name, "a4-") || strings.HasPrefix(sku.Name, "a3-"):
			want = &GPUSource
		case strings.HasPrefix(sku.Name, "lustre-"):
			want = &LustreSource
		}
		assert.Equal(t, want, p.Source, sku.String())
	}
	for _, s := range []Source{CatalogSource, FeeSource, GPUSource, LustreSource} {
		assert.Regexp(t, `^\d{4}-\d{2}-\d{2}$`, s.Date)
	}
	// The cluster fee is the same in every region, those without a machine price included.
	for _, region := range []string{"us-east1", "europe-west2", "me-central2"} {
		p, ok := Catalog.Lookup(SKU{Name: "gke-cluster", Region: region})
		assert.True(t, ok, region)
		assert.InDelta(t, 0.10, p.USD, 1e-9)
	}
	_, ok := Catalog.Lookup(SKU{Name: "n2-standard-16", Region: "me-central2"})
	assert.False(t, ok, "a machine's price is its region's only")
}

// A price far above any list price of its kind (a typo, or a price of another unit) is named;
// plausible prices are not.
func TestImplausiblePricesAreNamed(t *testing.T) {
	bill := Bill{Lines: []Line{
		{Item: "GPU nodes", SKU: SKU{Name: "a4-highgpu-8g/spot", Region: "us-east1"}, Unit: PerHour, Training: 8},
		{Item: "Lustre instance", SKU: SKU{Name: "lustre-500", Region: "us-east1"}, Unit: PerGiBMonth, Training: 18000},
	}}
	src := &Source{Date: "2026-12-01", Name: "t"}
	table := func(gpu, lustre float64) Table {
		return Table{Prices: map[SKU]Price{bill.Lines[0].SKU: {USD: gpu, Source: src}, bill.Lines[1].SKU: {USD: lustre, Source: src}}}
	}
	assert.Empty(t, bill.Implausible(table(39.63, 0.3)))
	got := bill.Implausible(table(39630, 300))
	require.Len(t, got, 2)
	assert.Contains(t, got[0], "a4-highgpu-8g/spot in us-east1 (GPU nodes) at $39630 per hour is above any list price of its kind ($200)")
	assert.Contains(t, got[1], "lustre-500 in us-east1 (Lustre instance) at $300 per GiB-month")
	assert.Empty(t, bill.Implausible(table(MaxPlausibleHourUSD, MaxPlausibleGiBMonthUSD)), "at the bound")
}

// The shipped GPU machines: spot A4 where SkyPilot's catalog lists it; A3 Ultra as its two rows
// summed, and only where its spot price is below its on-demand one; nothing for what the catalog
// contradicts itself on (A4 on demand) or lacks (flex-start).
func TestTheShippedGPUPricesHoldTogether(t *testing.T) {
	p, ok := Catalog.Lookup(SKU{Name: "a4-highgpu-8g/spot", Region: "us-east1"})
	require.True(t, ok)
	assert.InDelta(t, 32.6064, p.USD, 1e-9)
	p, ok = Catalog.Lookup(SKU{Name: "a3-ultragpu-8g", Region: "us-central1"})
	require.True(t, ok)
	assert.InDelta(t, 12.266+74.49392, p.USD, 1e-9, "vCPUs and memory plus 8 H200")
	for _, missing := range []SKU{
		{Name: "a4-highgpu-8g", Region: "us-east1"},
		{Name: "a4-highgpu-8g/flex-start", Region: "us-east1"},
		{Name: "a3-ultragpu-8g", Region: "us-south1"},
	} {
		_, ok := Catalog.Lookup(missing)
		assert.False(t, ok, missing.String())
	}
	for sku, spot := range Catalog.Prices {
		name, found := strings.CutSuffix(sku.Name, "/spot")
		if !found {
			continue
		}
		if onDemand, ok := Catalog.Lookup(SKU{Name: name, Region: sku.Region}); ok {
			assert.Less(t, spot.USD, onDemand.USD, sku.String())
		}
	}
}

// A line with a stand-in is priced at the stand-in's price when its own region has none, and
// says whose price it is; its own region's price, shipped or given (plan --prices), wins.
func TestAStandInPriceSaysWhoseItIs(t *testing.T) {
	east := SKU{Name: "lustre-500", Region: "us-east1"}
	iowa := SKU{Name: "lustre-500", Region: "us-central1"}
	line := Line{Item: "Lustre instance", SKU: east, Unit: PerGiBMonth, Training: 1000, Idle: 1000, Note: "billed by provisioned capacity", StandIn: &iowa}
	e := Bill{Lines: []Line{line}}.Price(table(map[SKU]float64{iowa: 0.34}))
	assert.InDelta(t, 340, e.IdlePerMonth.KnownUSD, 1e-9, "1000 GiB × $0.34")
	assert.Equal(t, "billed by provisioned capacity; priced at us-central1's list price: none of us-east1 is recorded", e.Lines[0].Note)
	own := Bill{Lines: []Line{line}}.Price(table(map[SKU]float64{iowa: 0.34, east: 0.30}))
	assert.InDelta(t, 300, own.IdlePerMonth.KnownUSD, 1e-9, "the region's own price")
	assert.Equal(t, "billed by provisioned capacity", own.Lines[0].Note)
	none := Bill{Lines: []Line{line}}.Price(Table{})
	assert.False(t, none.IdlePerMonth.Complete(), "no stand-in price either: unknown")
}

// The shipped Managed Lustre prices are the recorded ones
// (testdata/recorded/prices-managed-lustre.txt, "Managed Lustre Capacity <tier>-Perf Iowa").
func TestTheShippedLustrePricesAreTheRecordedOnes(t *testing.T) {
	data, err := os.ReadFile("../../testdata/recorded/prices-managed-lustre.txt")
	require.NoError(t, err)
	recorded := regexp.MustCompile(`(?m)^Managed Lustre Capacity (\d+)-Perf Iowa\s+([0-9.]+)$`).FindAllStringSubmatch(string(data), -1)
	require.Len(t, recorded, 4, "the 125, 250, 500 and 1000 tiers")
	for _, m := range recorded {
		usd, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		p, ok := Catalog.Lookup(SKU{Name: "lustre-" + m[1], Region: "us-central1"})
		require.True(t, ok, m[1])
		assert.InDelta(t, usd, p.USD, 0, m[1])
		assert.Equal(t, "2026-06-05", p.Source.Date)
	}
	_, ok := Catalog.Lookup(SKU{Name: "lustre-500", Region: "us-east1"})
	assert.False(t, ok, "no other region's price is recorded: a stand-in says so instead")
}
