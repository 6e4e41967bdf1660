package cost

import "fmt"

// CatalogSource is the price list shipped with the program: Google's list prices in USD, as the
// Cloud Billing Catalog API (https://cloud.google.com/billing/v1/how-tos/catalog-api) served
// them on 2026-07-30 and github.com/Cyclenerd/google-cloud-pricing-cost-calculator compiled
// them (pricing.yml, "generated: Thu Jul 30 06:13:17 2026", commit fd66b26). Machine prices
// are its on-demand `hour`; disk and bucket prices its `month` per GiB.
//
// That compilation carries no GPU machine type of A4 or A3 Ultra (GPUSource prices those) and
// no Managed Lustre.
var CatalogSource = Source{
	Date: "2026-07-30",
	Name: "Cloud Billing Catalog list prices, as compiled in github.com/Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml",
}

// FeeSource is GKE's pricing page (https://cloud.google.com/kubernetes-engine/pricing), read
// on 2026-12-01: "A flat cluster management fee of $0.10 per cluster per hour ... applies to all
// GKE clusters irrespective of the mode of operation". Its free tier's monthly credit applies to
// zonal and Autopilot clusters only; the program's Standard clusters are regional.
var FeeSource = Source{
	Date: "2026-12-01",
	Name: "GKE pricing page (cluster management fee)",
}

// ClusterFeeUSDPerHour is GKE's cluster management fee (FeeSource).
const ClusterFeeUSDPerHour = 0.10

// GPUSource is SkyPilot's published catalog of Google Cloud machines, the one public dated
// compilation offline that has A4 and A3 Ultra: github.com/skypilot-org/skypilot-catalog,
// catalogs/v8/gcp/vms.csv at commit 006059e0f18acb1341e22a27751e9f80df6ba92f, read on
// 2026-12-05 (the copy at hand does not carry the commit's own date). It lists a machine in two
// rows, its vCPUs and memory (InstanceType a3-ultragpu-8g, a4-highgpu-8g) and its GPUs
// (AcceleratorName H200 or B200, count 8), each with Price (on demand) and SpotPrice per hour.
var GPUSource = Source{
	Date: "2026-12-05",
	Name: "SkyPilot's GCP catalog, github.com/skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv at commit 006059e",
}

// LustreSource is Managed Lustre's list prices per GiB-month by performance tier, in Iowa
// (us-central1) alone, from a Cloud Billing pricing export of 2026-06-05 (SKU descriptions
// "Managed Lustre Capacity <tier>-Perf Iowa") as a public benchmark write-up quotes them; a
// second source agrees on the 125 tier (The New Stack, July 2025: "$0.145 a month").
// testdata/recorded/prices-managed-lustre.txt is the record, which a test holds these to.
var LustreSource = Source{
	Date: "2026-06-05",
	Name: "Managed Lustre list prices in Iowa (us-central1), a Cloud Billing pricing export",
}

// GPUStandInRegions are, by machine SKU, the region whose recorded price stands in where the
// machine's own region has none: a3-ultragpu-8g on demand (what a reservation bills) lists the
// same in each of the three regions where the catalog's rows hold together (gpuMachinePrices:
// us-central1, us-east4 and us-west1, $86.75992 an hour), so that price is the best record
// of another region's; the estimate says whose price it is. A4 on demand has no recorded price
// anywhere (the catalog contradicts itself), so none stands in for it.
var GPUStandInRegions = map[string]string{"a3-ultragpu-8g": "us-central1"}

// LustreRecordedRegion is the one region whose Managed Lustre prices are recorded: elsewhere a
// Lustre line is priced at its price, and says so (Line.StandIn).
const LustreRecordedRegion = "us-central1"

// LustreSKU is the program's name of a Managed Lustre instance's capacity in a throughput tier
// (MB/s per TiB): lustre-<tier>.
func LustreSKU(mbpsPerTiB int) string { return fmt.Sprintf("lustre-%d", mbpsPerTiB) }

// lustrePrices are LustreSource's, by LustreSKU.
var lustrePrices = map[string]map[string]float64{
	"lustre-125":  {LustreRecordedRegion: 0.145},
	"lustre-250":  {LustreRecordedRegion: 0.21},
	"lustre-500":  {LustreRecordedRegion: 0.34},
	"lustre-1000": {LustreRecordedRegion: 0.60},
}

// Catalog is the shipped table: CatalogSource's prices for the regions that offer B200 or H200
// machines (that compilation's tools/acceleratortyperegion.csv), GPUSource's GPU machines,
// LustreSource's Managed Lustre tiers, and GKE's cluster fee, the same in every region
// (FeeSource: "applies to all GKE clusters").
var Catalog = tableOf(&CatalogSource, catalogPrices).With(tableOf(&GPUSource, gpuMachinePrices())).With(tableOf(&LustreSource, lustrePrices)).With(Table{Prices: map[SKU]Price{
	{Name: "gke-cluster", Region: AnyRegion}: {USD: ClusterFeeUSDPerHour, Source: &FeeSource},
}})

// machineRows are GPUSource's two rows of a machine in one zone: vCPUs and memory, and GPUs.
type machineRows struct{ host, gpus float64 }

// gpuMachinePrices are GPUSource's machines whose rows hold together: a machine is priced in a
// region only when its spot price is below its on-demand price, row by row. What is left out,
// and why:
//   - a4-highgpu-8g on demand (reservations bill at it) and flex-start: the catalog's B200 rows
//     give two on-demand prices, 64.44 and 90.216 per hour, among regions that share one spot
//     price (32.6064: us-east4 and us-east1 among them), and no public record at hand tells
//     which is the list price; the catalog has no flex-start price.
//   - a3-ultragpu-8g outside us-central1, us-east4 and us-west1: its H200 rows there have a spot
//     price above the on-demand one (us-south1: 43.9512 against 36.60258), or none.
//
// A4 bills its vCPUs and memory within the GPU slice (hardware catalog's CatalogSlice), and its
// machine row is priced 0.0: the GPU row is the machine's price.
func gpuMachinePrices() map[string]map[string]float64 {
	a4Spot := map[string]float64{
		"asia-northeast1": 39.128, "asia-southeast1": 35.5712, "europe-north1": 35.8672,
		"europe-west4": 35.8672, "us-central1": 32.6064, "us-east1": 32.6064, "us-east4": 32.6064,
		"us-south1": 32.6064, "us-west2": 32.6064, "us-west3": 32.6064,
	}
	a3UltraOnDemand := map[string]machineRows{
		"us-central1": {12.266, 74.49392}, "us-east4": {12.266, 74.49392}, "us-west1": {12.266, 74.49392},
	}
	a3UltraSpot := map[string]machineRows{
		"us-central1": {3.74713, 37.2472}, "us-east4": {2.80034, 29.2536}, "us-west1": {3.74713, 37.2472},
	}
	sum := func(rows map[string]machineRows) map[string]float64 {
		out := map[string]float64{}
		for region, r := range rows {
			out[region] = r.host + r.gpus
		}
		return out
	}
	return map[string]map[string]float64{
		"a4-highgpu-8g/spot":  a4Spot,
		"a3-ultragpu-8g":      sum(a3UltraOnDemand),
		"a3-ultragpu-8g/spot": sum(a3UltraSpot),
	}
}

// catalogPrices are USD per hour (machine types, on-demand) or per GiB-month (pd-balanced: the
// CPU nodes' boot disks, GKE's default disk type; gcs-standard: Standard storage in a regional
// bucket), by SKU name and region.
var catalogPrices = map[string]map[string]float64{
	"n2-standard-8": {
		"asia-northeast1": 0.498872,
		"asia-south1":     0.466576,
		"asia-south2":     0.466576,
		"asia-southeast1": 0.470064,
		"europe-north1":   0.45839696,
		"europe-west1":    0.500496,
		"europe-west4":    0.55551496,
		"us-central1":     0.388472,
		"us-east1":        0.388472,
		"us-east4":        0.437512,
		"us-east5":        0.388472,
		"us-south1":       0.45839696,
		"us-west1":        0.388472,
		"us-west2":        0.466608,
		"us-west3":        0.437496,
	},
	"n2-standard-16": {
		"asia-northeast1": 0.997744,
		"asia-south1":     0.933152,
		"asia-south2":     0.933152,
		"asia-southeast1": 0.940128,
		"europe-north1":   0.91679392,
		"europe-west1":    1.000992,
		"europe-west4":    1.11102992,
		"us-central1":     0.776944,
		"us-east1":        0.776944,
		"us-east4":        0.875024,
		"us-east5":        0.776944,
		"us-south1":       0.91679392,
		"us-west1":        0.776944,
		"us-west2":        0.933216,
		"us-west3":        0.874992,
	},
	"n2-standard-32": {
		"asia-northeast1": 1.995488,
		"asia-south1":     1.866304,
		"asia-south2":     1.866304,
		"asia-southeast1": 1.880256,
		"europe-north1":   1.83358784,
		"europe-west1":    2.001984,
		"europe-west4":    2.22205984,
		"us-central1":     1.553888,
		"us-east1":        1.553888,
		"us-east4":        1.750048,
		"us-east5":        1.553888,
		"us-south1":       1.83358784,
		"us-west1":        1.553888,
		"us-west2":        1.866432,
		"us-west3":        1.749984,
	},
	"pd-balanced": {
		"asia-northeast1": 0.13,
		"asia-south1":     0.12,
		"asia-south2":     0.12,
		"asia-southeast1": 0.11,
		"europe-north1":   0.11,
		"europe-west1":    0.1,
		"europe-west4":    0.11,
		"us-central1":     0.1,
		"us-east1":        0.1,
		"us-east4":        0.11,
		"us-east5":        0.1,
		"us-south1":       0.12,
		"us-west1":        0.1,
		"us-west2":        0.12,
		"us-west3":        0.12,
	},
	"gcs-standard": {
		"asia-northeast1": 0.023,
		"asia-south1":     0.023,
		"asia-south2":     0.023,
		"asia-southeast1": 0.02,
		"europe-north1":   0.02,
		"europe-west1":    0.02,
		"europe-west4":    0.02,
		"us-central1":     0.02,
		"us-east1":        0.02,
		"us-east4":        0.023,
		"us-east5":        0.02,
		"us-south1":       0.02,
		"us-west1":        0.02,
		"us-west2":        0.023,
		"us-west3":        0.023,
	},
}

// tableOf builds a table from prices by SKU name and region.
func tableOf(src *Source, prices map[string]map[string]float64) Table {
	t := Table{Prices: map[SKU]Price{}}
	for name, byRegion := range prices {
		for region, usd := range byRegion {
			t.Prices[SKU{Name: name, Region: region}] = Price{USD: usd, Source: src}
		}
	}
	return t
}
