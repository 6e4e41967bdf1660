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

// pricesTimeout bounds the catalog's read: Compute Engine has tens of thousands of SKUs, read in
// pages of 5000.
const pricesTimeout = 3 * time.Minute

// CatalogSource names the catalog in the price files preflight writes.
const CatalogSource = "Cloud Billing Catalog API, " + billing.ComputeEngine + "/skus (Compute Engine list prices in USD), read by go run . preflight"

// machinesToPrice are the bill's machine lines and how the catalog bills each; a line the
// program knows no rule for is unknown from the start, with the reason.
func machinesToPrice(ctx context.Context, c *Clients, n Needs, bill cost.Bill) ([]billing.Machine, []billing.Unknown) {
	var machines []billing.Machine
	var unknown []billing.Unknown
	for _, l := range bill.Lines {
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
	return machines, unknown
}

// checkPrices reads the catalog, prices the stack's machines and writes them to path as a
// price file that `plan --prices` reads. It names what it could not price, and the bill's other
// lines that neither the file nor the shipped table prices.
func checkPrices(ctx context.Context, c *Clients, n Needs, bill cost.Bill, path, today string, planArgs []string) cmd.Finding {
	f := cmd.Finding{Name: CheckPrices}
	ctx, cancel := context.WithTimeout(ctx, pricesTimeout)
	defer cancel()
	skus, err := billing.List(ctx, c.Billing)
	if err != nil {
		f.Status, f.Detail = cmd.Failed, "the Cloud Billing Catalog cannot be read: "+apiMessage(err)
		f.Fix = fmt.Sprintf("the catalog is read through the Cloud Billing API of the project: `gcloud services enable cloudbilling.googleapis.com --project %s`, then run preflight again", n.Project)
		return f
	}
	machines, unknown := machinesToPrice(ctx, c, n, bill)
	prices, notFound := billing.Price(skus, machines)
	file := cost.File{Source: cost.Source{Date: today, Name: CatalogSource}, Prices: prices}
	table, err := file.Table()
	if err != nil {
		f.Status, f.Detail = cmd.Failed, "internal error (please report it): the prices read make no price file: "+err.Error()
		return f
	}

	// What plan will show with the file: its lines priced as plan prices them, and the reason of
	// each line the catalog did not price.
	reasons := map[cost.SKU]string{}
	for _, u := range append(unknown, notFound...) {
		reasons[u.SKU] = u.Reason
	}
	var still []string
	for _, l := range bill.Price(cost.Catalog.With(table)).Lines {
		reason, asked := reasons[l.SKU]
		switch {
		case l.Price == nil && asked:
			still = append(still, fmt.Sprintf("%s (%s)", l.SKU, reason))
		case l.Price == nil:
			still = append(still, fmt.Sprintf("%s (%s: neither the catalog's Compute Engine SKUs nor the shipped table)", l.SKU, l.Item))
		case asked:
			// Priced from the shipped table: say so, lest the reason read as unknown.
			still = append(still, fmt.Sprintf("%s (%s; plan keeps the shipped table's price of %s)", l.SKU, reason, l.Price.Source.Date))
		}
	}
	if len(prices) == 0 {
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("no line of the bill could be priced from %d SKUs, %s not written: %s", len(skus), path, strings.Join(still, "; "))
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
		parts[i] = fmt.Sprintf("%s %s/%s", p.SKU, cost.Dollars(p.USD), cost.PerHour)
	}
	f.Status = cmd.OK
	f.Detail = fmt.Sprintf("wrote %s with the list prices of %s, from %d SKUs", path, strings.Join(parts, ", "), len(skus))
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
