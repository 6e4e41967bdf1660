package cost

// CatalogSource is the price list shipped with the program: Google's list prices in USD, as the
// Cloud Billing Catalog API (https://cloud.google.com/billing/v1/how-tos/catalog-api) served
// them on 2026-07-30 and github.com/Cyclenerd/google-cloud-pricing-cost-calculator compiled
// them (pricing.yml, "generated: Thu Jul 30 06:13:17 2026", commit fd66b26). Machine prices
// are its on-demand `hour`; disk and bucket prices its `month` per GiB.
//
// It has no price for the GPU machine types (a4-highgpu-8g, a3-ultragpu-8g) or Managed Lustre:
// that compilation does not carry them, and no other dated list was at hand. They show as
// unknown until a price file (`plan --prices`) supplies them.
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

// Catalog is the shipped table: CatalogSource's prices for the regions that offer B200 or H200
// machines (that compilation's tools/acceleratortyperegion.csv), and GKE's cluster fee, the same
// in every region (FeeSource: "applies to all GKE clusters").
var Catalog = tableOf(&CatalogSource, catalogPrices).With(Table{Prices: map[SKU]Price{
	{Name: "gke-cluster", Region: AnyRegion}: {USD: ClusterFeeUSDPerHour, Source: &FeeSource},
}})

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
