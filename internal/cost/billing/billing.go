// Package billing prices a stack's machines and its Managed Lustre instance from Google's Cloud
// Billing Catalog API: Compute Engine's and Managed Lustre's list prices, matched to the bill's
// lines by the descriptions Google bills them under. Price and PriceCapacity are pure; List and
// FindService read the catalog.
package billing

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	cloudbilling "google.golang.org/api/cloudbilling/v1"

	"gke-rl/internal/cost"
)

// ComputeEngine is the catalog's name of the Compute Engine service, whose SKUs bill machines
// (the service every catalog reader lists: OpenCost's pkg/cloud/gcp, sc-crawler, SkyPilot).
const ComputeEngine = "services/6F81-5844-456A"

// List reads every SKU of a catalog service ("services/<id>") with its list price in USD, page
// by page.
func List(ctx context.Context, svc *cloudbilling.APIService, service string) ([]*cloudbilling.Sku, error) {
	var skus []*cloudbilling.Sku
	err := svc.Services.Skus.List(service).CurrencyCode("USD").Pages(ctx, func(page *cloudbilling.ListSkusResponse) error {
		skus = append(skus, page.Skus...)
		return nil
	})
	return skus, err
}

// Machine is one machine line of a bill and how the catalog bills its machine type.
type Machine struct {
	// SKU is the bill's name of the line ("a4-highgpu-8g/spot" in "us-central1").
	SKU cost.SKU
	// Spot machines bill under the same descriptions prefixed "Spot Preemptible ".
	Spot bool
	// Slice, when set, is the description of a SKU billed per GPU that covers the machine's
	// vCPUs and memory too (hardware catalog's CatalogSlice); the machine is Slices of them.
	Slice  string
	Slices int
	// Otherwise the machine is VCPUs × its family's "<FAMILY> Instance Core" SKU plus its memory
	// × "<FAMILY> Instance Ram" (machineTypes.get gives both).
	Family           string
	VCPUs, MemoryMiB int64
}

// Unknown is a line the catalog did not price, and why.
type Unknown struct {
	SKU    cost.SKU
	Reason string
}

// Price prices each machine from the SKUs. A machine is priced only when every SKU it bills
// under is found exactly once for its region, in USD and in the unit the rule expects; anything
// else leaves it unknown with the reason, never guessed.
func Price(skus []*cloudbilling.Sku, machines []Machine) ([]cost.FilePrice, []Unknown) {
	return priceEach(skus, machines)
}

// priced is a line the catalog prices: a machine or a capacity.
type priced interface {
	sku() cost.SKU
	price(skus []*cloudbilling.Sku) (usd float64, basis string, err error)
}

// priceEach prices each line from the SKUs, or leaves it unknown with the reason.
func priceEach[L priced](skus []*cloudbilling.Sku, lines []L) ([]cost.FilePrice, []Unknown) {
	var prices []cost.FilePrice
	var unknown []Unknown
	for _, l := range lines {
		usd, basis, err := l.price(skus)
		if err != nil {
			unknown = append(unknown, Unknown{SKU: l.sku(), Reason: err.Error()})
			continue
		}
		prices = append(prices, cost.FilePrice{SKU: l.sku(), USD: usd, Basis: basis})
	}
	return prices, unknown
}

func (m Machine) sku() cost.SKU { return m.SKU }

func (m Machine) price(skus []*cloudbilling.Sku) (float64, string, error) {
	if m.Slice != "" {
		r, err := m.rate(skus, []string{m.Slice}, "h")
		if err != nil {
			return 0, "", err
		}
		return float64(m.Slices) * r.usd, fmt.Sprintf("%d × %s", m.Slices, r), nil
	}
	// The family's SKUs name it as the machine type does ("N2 Instance Core", "N4D Instance
	// Core", verbatim in OpenCost's recorded pages), or with the vendor for some AMD families
	// ("T2D AMD Instance Core", same recording; "N2D AMD" in Google's SKU lists).
	fam := strings.ToUpper(m.Family)
	core, err := m.rate(skus, []string{fam + " Instance Core", fam + " AMD Instance Core"}, "h")
	if err != nil {
		return 0, "", err
	}
	ram, err := m.rate(skus, []string{fam + " Instance Ram", fam + " AMD Instance Ram"}, "GiBy.h", "GBy.h")
	if err != nil {
		return 0, "", err
	}
	gib := float64(m.MemoryMiB) / 1024
	memory := gib
	if ram.unit == "GBy.h" {
		// Some families bill memory per decimal GB (sc-crawler's tests: C4D, M4).
		memory = gib * (1 << 30) / 1e9
	}
	usd := float64(m.VCPUs)*core.usd + memory*ram.usd
	return usd, fmt.Sprintf("%d vCPUs × %s + %g GiB × %s", m.VCPUs, core, gib, ram), nil
}

// rate is one SKU's unit price.
type rate struct {
	usd         float64
	unit        string
	description string
	id          string
}

func (r rate) String() string {
	s := fmt.Sprintf("%q at $%s/%s", r.description, strconv.FormatFloat(r.usd, 'f', -1, 64), r.unit)
	if r.id != "" {
		s += " (SKU " + r.id + ")"
	}
	return s
}

// rate finds the one SKU of the machine's region whose description is one of stems followed by
// " running in <place>", and reads its price in one of units.
func (m Machine) rate(skus []*cloudbilling.Sku, stems []string, units ...string) (rate, error) {
	prefix := ""
	if m.Spot {
		prefix = "Spot Preemptible "
	}
	want := fmt.Sprintf("%q", prefix+stems[0]+" running in …")
	s, err := one(skus, m.SKU.Region, want, func(description string) bool {
		// Matched by description alone: the spot A4 slice is categorized OnDemand (sc-crawler's
		// test of the live SKU), so the category cannot tell spot apart.
		return slices.ContainsFunc(stems, func(stem string) bool {
			return strings.HasPrefix(description, prefix+stem+" running in ")
		})
	})
	if err != nil {
		return rate{}, err
	}
	r := rate{description: s.Description, id: s.SkuId}
	expr, money, err := usd(s)
	if err != nil {
		return rate{}, err
	}
	if !slices.Contains(units, expr.UsageUnit) {
		return rate{}, fmt.Errorf("%q is priced per %q, and pricing %s takes %s", s.Description, expr.UsageUnit, m.SKU.Name, strings.Join(units, " or "))
	}
	r.unit = expr.UsageUnit
	r.usd = float64(money.Units) + float64(money.Nanos)/1e9
	return r, nil
}

// one finds the one SKU of region whose description matches; want names it in the errors.
func one(skus []*cloudbilling.Sku, region, want string, matches func(description string) bool) (*cloudbilling.Sku, error) {
	var found []*cloudbilling.Sku
	for _, s := range skus {
		if slices.Contains(s.ServiceRegions, region) && matches(s.Description) {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("the catalog has no SKU %s for %s", want, region)
	case 1:
		return found[0], nil
	default:
		names := make([]string, len(found))
		for i, s := range found {
			names[i] = strconv.Quote(s.Description)
		}
		return nil, fmt.Errorf("%d SKUs could be %s in %s (%s): not guessing which", len(found), want, region, strings.Join(names, ", "))
	}
}

// usd is a SKU's current price, refused unless it is in USD.
func usd(s *cloudbilling.Sku) (*cloudbilling.PricingExpression, *cloudbilling.Money, error) {
	expr, money, err := current(s)
	if err != nil {
		return nil, nil, fmt.Errorf("%q: %w", s.Description, err)
	}
	if money.CurrencyCode != "USD" {
		return nil, nil, fmt.Errorf("%q is priced in %s, not USD", s.Description, money.CurrencyCode)
	}
	return expr, money, nil
}

// current is a SKU's price now: the last of its pricing infos ("A timeline of pricing info for
// this SKU in chronological order", the v1 reference; without a time range the catalog answers
// with the current one only), at its first tier, the list price of the first unit.
func current(s *cloudbilling.Sku) (*cloudbilling.PricingExpression, *cloudbilling.Money, error) {
	if len(s.PricingInfo) == 0 || s.PricingInfo[len(s.PricingInfo)-1].PricingExpression == nil {
		return nil, nil, fmt.Errorf("has no pricing expression")
	}
	expr := s.PricingInfo[len(s.PricingInfo)-1].PricingExpression
	for _, t := range expr.TieredRates {
		if t.StartUsageAmount == 0 && t.UnitPrice != nil {
			return expr, t.UnitPrice, nil
		}
	}
	return nil, nil, fmt.Errorf("has no tier from the first unit")
}
