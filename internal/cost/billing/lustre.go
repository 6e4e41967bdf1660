package billing

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	cloudbilling "google.golang.org/api/cloudbilling/v1"

	"gke-rl/internal/cost"
)

// LustreWord is what the catalog's name of Managed Lustre's service holds. The service's ID is
// in no public record this program has (its SKUs' descriptions are, from a Cloud Billing pricing
// export: "Managed Lustre Capacity 500-Perf Iowa"), so FindService looks it up by name instead of
// pinning an ID that could be wrong.
const LustreWord = "Lustre"

// FindService is the one catalog service whose display name holds word (case aside), as
// "services/<id>". None, or more than one, is an error naming what the list holds, never a guess.
func FindService(ctx context.Context, svc *cloudbilling.APIService, word string) (string, error) {
	var found []*cloudbilling.Service
	err := svc.Services.List().Pages(ctx, func(page *cloudbilling.ListServicesResponse) error {
		for _, s := range page.Services {
			if strings.Contains(strings.ToLower(s.DisplayName), strings.ToLower(word)) {
				found = append(found, s)
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("the catalog lists no service named with %q", word)
	case 1:
		return found[0].Name, nil
	default:
		names := make([]string, len(found))
		for i, s := range found {
			names[i] = fmt.Sprintf("%q (%s)", s.DisplayName, s.Name)
		}
		return "", fmt.Errorf("%d services of the catalog are named with %q (%s): not guessing which", len(found), word, strings.Join(names, ", "))
	}
}

// Capacity is a storage line billed per GiB-month of provisioned capacity, under a SKU whose
// description is Stem followed by the region's place name ("Managed Lustre Capacity 500-Perf
// Iowa").
type Capacity struct {
	SKU  cost.SKU
	Stem string
}

// LustreCapacity is the capacity line of a Managed Lustre instance of the given throughput tier
// (MB/s per TiB): the pricing export's descriptions name the tiers "125-Perf" to "1000-Perf".
func LustreCapacity(sku cost.SKU, mbpsPerTiB int) Capacity {
	return Capacity{SKU: sku, Stem: fmt.Sprintf("Managed Lustre Capacity %d-Perf", mbpsPerTiB)}
}

// capacityUnits are the catalog's units of a capacity price (the v1 reference's usageUnit: "GiBy.mo"
// per GiB-month, "GiBy.h" per GiB-hour) and how many of each a GiB-month holds: a month of
// HoursPerMonth, as Google's price lists count it. Which of the two Managed Lustre's SKUs use is
// not recorded here; any other unit leaves the line unknown.
var capacityUnits = map[string]float64{"GiBy.mo": 1, "GiBy.h": cost.HoursPerMonth}

// PriceCapacity prices each capacity line per GiB-month from the SKUs of its service, by the
// same rule as Price: one SKU of the line's region, in USD, in a unit it knows, or unknown with
// the reason.
func PriceCapacity(skus []*cloudbilling.Sku, lines []Capacity) ([]cost.FilePrice, []Unknown) {
	return priceEach(skus, lines)
}

func (c Capacity) sku() cost.SKU { return c.SKU }

func (c Capacity) price(skus []*cloudbilling.Sku) (float64, string, error) {
	s, err := one(skus, c.SKU.Region, fmt.Sprintf("%q", c.Stem+" …"), func(description string) bool {
		// The stem, then one word or more of place: "500-Perf" must not match "500-Perf-X".
		return strings.HasPrefix(description, c.Stem+" ")
	})
	if err != nil {
		return 0, "", err
	}
	expr, money, err := usd(s)
	if err != nil {
		return 0, "", err
	}
	per, ok := capacityUnits[expr.UsageUnit]
	if !ok {
		return 0, "", fmt.Errorf("%q is priced per %q, and pricing %s takes GiBy.mo or GiBy.h", s.Description, expr.UsageUnit, c.SKU.Name)
	}
	r := rate{description: s.Description, id: s.SkuId, unit: expr.UsageUnit, usd: float64(money.Units) + float64(money.Nanos)/1e9}
	basis := r.String()
	if per != 1 {
		basis += fmt.Sprintf(" × %s hours a month", strconv.FormatFloat(per, 'f', -1, 64))
	}
	return r.usd * per, basis, nil
}
