package preflight

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"al.essio.dev/pkg/shellescape"

	"gke-rl/cmd"
	"gke-rl/internal/cost"
	"gke-rl/internal/cost/billing"
	"gke-rl/internal/kinds"
)

// CheckPrices is the finding of `--prices-out`: not a check of the project's readiness, but the
// step that writes today's list prices of the stack's machines to a price file.
const CheckPrices = "prices"

// pricesTimeout bounds the catalog's reads: Compute Engine has tens of thousands of SKUs, read in
// pages of 5000; Managed Lustre's service list and SKUs are a few pages more.
const pricesTimeout = 3 * time.Minute

// CatalogSource names the catalog in the price files preflight writes for a stack without
// Managed Lustre.
const CatalogSource = catalogName + ", read by go run . preflight"

const catalogName = "Cloud Billing Catalog API, " + billing.ComputeEngine + "/skus (Compute Engine list prices in USD)"

// catalogSource names the catalog in a price file: the services whose SKUs priced it.
func catalogSource(lustreService string) string {
	if lustreService == "" {
		return CatalogSource
	}
	return catalogName + " and " + lustreService + "/skus (Managed Lustre list prices in USD), read by go run . preflight"
}

// toPrice is what the catalog is asked to price: the bill's machine lines and its Managed Lustre
// capacity, each with how the catalog bills it; a line the program knows no rule for is unknown
// from the start, with the reason.
type toPrice struct {
	machines   []billing.Machine
	capacities []billing.Capacity
	unknown    []billing.Unknown
}

func linesToPrice(ctx context.Context, c *Clients, n Needs, bill cost.Bill) toPrice {
	var machines []billing.Machine
	var capacities []billing.Capacity
	var unknown []billing.Unknown
	for _, l := range bill.Lines {
		if n.Lustre != nil && l.SKU.Name == cost.LustreSKU(n.Lustre.ThroughputMBpsPerTiB) {
			capacities = append(capacities, billing.LustreCapacity(l.SKU, n.Lustre.ThroughputMBpsPerTiB))
			continue
		}
		switch l.SKU.Name {
		case n.GPUSKU:
			switch {
			case n.Mode == kinds.Autopilot:
				unknown = append(unknown, billing.Unknown{SKU: l.SKU, Reason: "Autopilot bills GPU pods under SKUs of its own, which this program does not know"})
			case n.Provisioning == kinds.FlexStart:
				unknown = append(unknown, billing.Unknown{SKU: l.SKU, Reason: "flex-start machines bill under SKUs of their own, which no public record names for " + n.MachineType})
			case n.CatalogSlice == "":
				unknown = append(unknown, billing.Unknown{SKU: l.SKU, Reason: "the catalog bills " + n.MachineType + "'s GPUs apart from its vCPUs and memory, and no public record names the SKUs of those"})
			default:
				machines = append(machines, billing.Machine{SKU: l.SKU, Spot: n.Provisioning == kinds.Spot, Slice: n.CatalogSlice, Slices: n.GPUsPerNode})
			}
		case n.CPUMachineType:
			mt, err := c.machineType(ctx, n.Project, n.Zone, n.CPUMachineType)
			if err != nil {
				unknown = append(unknown, billing.Unknown{SKU: l.SKU, Reason: "its vCPUs and memory cannot be read: " + apiMessage(err)})
				continue
			}
			family, _, _ := strings.Cut(n.CPUMachineType, "-")
			machines = append(machines, billing.Machine{SKU: l.SKU, Family: family, VCPUs: mt.GuestCpus, MemoryMiB: mt.MemoryMb})
		}
	}
	return toPrice{machines: machines, capacities: capacities, unknown: unknown}
}

// priceLustre prices the Managed Lustre capacity from its own service's SKUs, found by name in
// the catalog's service list. What cannot be read leaves the capacity unknown with the reason;
// the machines' prices are written all the same. It returns the service it read, and its SKUs'
// count.
func priceLustre(ctx context.Context, c *Clients, capacities []billing.Capacity) (prices []cost.FilePrice, unknown []billing.Unknown, service string, read int) {
	if len(capacities) == 0 {
		return nil, nil, "", 0
	}
	unknownAll := func(reason string) []billing.Unknown {
		out := make([]billing.Unknown, len(capacities))
		for i, capacity := range capacities {
			out[i] = billing.Unknown{SKU: capacity.SKU, Reason: reason}
		}
		return out
	}
	service, err := billing.FindService(ctx, c.Billing, billing.LustreWord)
	if err != nil {
		return nil, unknownAll("Managed Lustre's service cannot be found in the catalog: " + apiMessage(err)), "", 0
	}
	skus, err := billing.List(ctx, c.Billing, service)
	if err != nil {
		return nil, unknownAll("Managed Lustre's SKUs (" + service + ") cannot be read: " + apiMessage(err)), "", 0
	}
	prices, unknown = billing.PriceCapacity(skus, capacities)
	if len(prices) == 0 {
		service = ""
	}
	return prices, unknown, service, len(skus)
}

// checkPrices reads the catalog, prices the stack's machines and writes them to path as a
// price file that `plan --prices` reads. It names what it could not price, and the bill's other
// lines that neither the file nor the shipped table prices.
func checkPrices(ctx context.Context, c *Clients, n Needs, bill cost.Bill, path, today string, planArgs []string) cmd.Finding {
	f := cmd.Finding{Name: CheckPrices}
	ctx, cancel := context.WithTimeout(ctx, pricesTimeout)
	defer cancel()
	skus, err := billing.List(ctx, c.Billing, billing.ComputeEngine)
	if err != nil {
		f.Status, f.Detail = cmd.Failed, "the Cloud Billing Catalog cannot be read: "+apiMessage(err)
		f.Fix = fmt.Sprintf("the catalog is read through the Cloud Billing API of the project: `gcloud services enable cloudbilling.googleapis.com --project %s`, then run preflight again", n.Project)
		return f
	}
	asked := linesToPrice(ctx, c, n, bill)
	prices, notFound := billing.Price(skus, asked.machines)
	lustrePrices, lustreNotFound, lustreService, lustreSKUs := priceLustre(ctx, c, asked.capacities)
	prices = append(prices, lustrePrices...)
	notFound = append(notFound, lustreNotFound...)
	read := len(skus) + lustreSKUs
	file := cost.File{Source: cost.Source{Date: today, Name: catalogSource(lustreService)}, Prices: prices}
	table, err := file.Table()
	if err != nil {
		f.Status, f.Detail = cmd.Failed, "internal error (please report it): the prices read make no price file: "+err.Error()
		return f
	}

	// What plan will show with the file: its lines priced as plan prices them, and the reason of
	// each line the catalog did not price.
	reasons := map[cost.SKU]string{}
	for _, u := range append(asked.unknown, notFound...) {
		reasons[u.SKU] = u.Reason
	}
	var still []string
	units := map[cost.SKU]cost.Unit{}
	priced := cost.Catalog.With(table)
	for _, l := range bill.Price(priced).Lines {
		units[l.SKU] = l.Unit
		reason, wasAsked := reasons[l.SKU]
		_, own := priced.Lookup(l.SKU)
		switch {
		case l.Price == nil && wasAsked:
			still = append(still, fmt.Sprintf("%s (%s)", l.SKU, reason))
		case l.Price == nil:
			still = append(still, fmt.Sprintf("%s (%s: neither the catalog's SKUs nor the shipped table)", l.SKU, l.Item))
		case wasAsked && !own:
			// Priced at another region's price of the shipped table (Managed Lustre's Iowa).
			still = append(still, fmt.Sprintf("%s (%s; plan keeps the shipped table's price of %s in %s)", l.SKU, reason, l.Price.Source.Date, l.StandIn.Region))
		case wasAsked:
			// Priced from the shipped table: say so, lest the reason read as unknown.
			still = append(still, fmt.Sprintf("%s (%s; plan keeps the shipped table's price of %s)", l.SKU, reason, l.Price.Source.Date))
		}
	}
	if len(prices) == 0 {
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("no line of the bill could be priced from %d SKUs, %s not written: %s", read, path, strings.Join(still, "; "))
		return f
	}
	data, err := json.MarshalIndent(file, "", "  ")
	if err == nil {
		err = os.WriteFile(path, append(data, '\n'), 0o644)
	}
	if err != nil {
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("%s cannot be written: %v", path, err)
		return f
	}
	parts := make([]string, len(prices))
	for i, p := range prices {
		parts[i] = fmt.Sprintf("%s %s/%s", p.SKU, cost.Dollars(p.USD), units[p.SKU])
	}
	f.Status = cmd.OK
	f.Detail = fmt.Sprintf("wrote %s with the list prices of %s, from %d SKUs", path, strings.Join(parts, ", "), read)
	if len(still) > 0 {
		f.Detail += "; without a price: " + strings.Join(still, "; ")
	}
	f.Detail += "; next: " + PlanWithPrices(planArgs, path)
	return f
}

// PlanWithPrices is the command that prices the stack with the file preflight wrote: plan with
// preflight's own --stack and --config arguments, so that it prices the same configuration.
func PlanWithPrices(planArgs []string, path string) string {
	return "`" + shellescape.QuoteCommand(append(append([]string{"go", "run", ".", "plan"}, planArgs...), "--prices", path)) + "`"
}
