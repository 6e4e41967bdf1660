package preflight

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/cmd/plan"
	"gke-rl/internal/cost"
	"gke-rl/test/clitest"
	"gke-rl/test/plantest"
)

// inIowa moves a stack to us-central1, the region the recorded catalog pages price.
var inIowa = []string{"--config", "gcp:region=us-central1", "--config", "gke-rl:zone=us-central1-b"}

// The seam: preflight writes the price file from the catalog, and the plan command it prints
// prices the stack with it, every line of smoke's bill known.
func TestPricesOutFeedsPlan(t *testing.T) {
	// The file is dated the day preflight runs: the test's clock.
	date := plantest.PlanTime.Format(time.DateOnly)
	file := filepath.Join(t.TempDir(), "prices.json")
	args := append(append([]string{"--stack", "smoke"}, yours...), inIowa...)
	code, out, calls := preflight(t, ready, append(args, "--prices-out", file)...)
	require.Equal(t, cmd.ExitOK, code, out)

	line := finding(t, out, CheckPrices)
	assert.Contains(t, line, "wrote "+file+" with the list prices of a4-highgpu-8g/spot in us-central1 $39.63/hour, n2-standard-16 in us-central1 $0.78/hour, from 22 SKUs")
	assert.Contains(t, out, "every check passed")
	var pages, machineTypes []string
	for _, c := range calls {
		switch {
		case c.Host == "cloudbilling.googleapis.com":
			pages = append(pages, c.Method+" "+c.Path)
		case strings.Contains(c.Path, "/machineTypes/"):
			machineTypes = append(machineTypes, c.Path)
		}
	}
	assert.Len(t, pages, 3, "every page of the catalog is read, and only read")
	assert.Equal(t, []string{
		"/compute/v1/projects/acme-rl/zones/us-central1-b/machineTypes/a4-highgpu-8g",
		"/compute/v1/projects/acme-rl/zones/us-central1-b/machineTypes/n2-standard-16",
	}, machineTypes, "the prices step prices the CPU pool with what the machine type check read")

	// The file: dated, sourced, each price with how it was made.
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var f cost.File
	require.NoError(t, json.Unmarshal(data, &f))
	assert.Equal(t, date, f.Date)
	assert.Equal(t, CatalogSource, f.Name)
	require.Len(t, f.Prices, 2)
	assert.Contains(t, f.Prices[0].Basis, `8 × "Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in Americas"`)

	// The next command, as printed, run as written.
	_, next, ok := strings.Cut(line, "; next: ")
	require.True(t, ok, line)
	cmds, err := clitest.MarkdownCommands("preflight output", next, "go")
	require.NoError(t, err)
	require.Len(t, cmds, 1)
	assert.Equal(t, append(append([]string{"go", "run", ".", "plan"}, args...), "--prices", file), cmds[0].Args)
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, plan.Main(cmds[0].Args[4:], plantest.Env(plantest.RepoRoot(), &stdout, &stderr)), stderr.String())
	assert.NotContains(t, stderr.String(), "prices no line", "every price of the file prices a line")
	assert.Contains(t, stdout.String(), "prices of "+date+": "+CatalogSource)
	costs := stdout.String()[strings.Index(stdout.String(), "Costs in USD"):]
	assert.NotContains(t, costs, "unknown", "smoke in us-central1 is priced line by line")
	assert.Regexp(t, `per hour while training  \$40\.\d\d`, costs)
}

// Where the catalog has no price for the stack's machines, nothing is written and the reasons
// are named; the readiness checks still pass.
func TestPricesOutWithoutAPrice(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prices.json")
	code, out, _ := preflight(t, ready, append(append([]string{"--stack", "smoke"}, yours...), "--prices-out", file)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	line := finding(t, out, CheckPrices)
	assert.Contains(t, line, "FAIL  prices        no line of the bill could be priced from 22 SKUs, "+file+" not written")
	assert.Contains(t, line, `a4-highgpu-8g/spot in us-east1 (the catalog has no SKU "Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in …" for us-east1; plan keeps the shipped table's price of 2026-12-05)`)
	assert.Contains(t, line, `n2-standard-16 in us-east1 (the catalog has no SKU "N2 Instance Core running in …" for us-east1; plan keeps the shipped table's price of 2026-07-30)`)
	assert.Contains(t, out, "every check passed: the project is ready for pulumi up")
	assert.Contains(t, out, "the price file was not written")
	assert.NoFileExists(t, file)
}

// The H200 machine and flex-start say why they are not priced; the CPU pool still is.
func TestPricesOutNamesWhatItCannotPrice(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prices.json")
	for _, tc := range []struct{ gpu, provisioning, reason string }{
		{"h200", "spot", "a3-ultragpu-8g/spot in us-central1 (the catalog bills a3-ultragpu-8g's GPUs apart from its vCPUs and memory, and no public record names the SKUs of those; plan keeps the shipped table's price of 2026-12-05)"},
		{"b200", "flex-start", "a4-highgpu-8g/flex-start in us-central1 (flex-start machines bill under SKUs of their own, which no public record names for a4-highgpu-8g)"},
	} {
		p := ready
		p.machineTypes = map[string]string{
			"a4-highgpu-8g":  "googleapis/preflight/compute-machinetype-a4-highgpu-8g.json",
			"a3-ultragpu-8g": "googleapis/preflight/compute-machinetype-a3-ultragpu-8g.json",
			"n2-standard-16": "googleapis/preflight/compute-machinetype-n2-standard-16.json",
		}
		args := append(append(append([]string{"--stack", "smoke"}, yours...), inIowa...), "--config", "gke-rl:gpu.type="+tc.gpu, "--config", "gke-rl:gpu.provisioning="+tc.provisioning, "--prices-out", file)
		_, out, _ := preflight(t, p, args...)
		line := finding(t, out, CheckPrices)
		assert.Contains(t, line, "ok    prices        wrote "+file+" with the list prices of n2-standard-16 in us-central1 $0.78/hour", tc.gpu)
		assert.Contains(t, line, "without a price: "+tc.reason, tc.gpu)
	}
}

// A project whose Cloud Billing API is off: the catalog's 403, and the command that enables it.
func TestPricesOutWithTheBillingAPIOff(t *testing.T) {
	p := ready
	p.skus = nil
	file := filepath.Join(t.TempDir(), "prices.json")
	code, out, _ := preflight(t, p, append(append(append([]string{"--stack", "smoke"}, yours...), inIowa...), "--prices-out", file)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckPrices), "the Cloud Billing Catalog cannot be read: Cloud Billing API has not been used in project 123456789012 before or it is disabled.")
	assert.Equal(t, "fix: the catalog is read through the Cloud Billing API of the project: `gcloud services enable cloudbilling.googleapis.com --project acme-rl`, then run preflight again", fixOf(t, out, CheckPrices))
	assert.NoFileExists(t, file)
}

// Autopilot's GPU pods and a CPU machine type that cannot be read are named with their reason;
// a line no price covers (b200-spot's Lustre instance) is named as such.
func TestPricesOutReasons(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prices.json")
	iowa := append(append([]string{"--stack", "smoke"}, yours...), inIowa...)

	code, out, _ := preflight(t, ready, append(iowa, "--config", "gke-rl:cluster.mode=autopilot", "--prices-out", file)...)
	assert.Equal(t, cmd.ExitCheckFailed, code, out)
	assert.Contains(t, finding(t, out, CheckPrices), "a4-highgpu-8g/spot/autopilot in us-central1 (Autopilot bills GPU pods under SKUs of its own, which this program does not know)")

	noCPU := ready
	noCPU.machineTypes = map[string]string{"a4-highgpu-8g": ready.machineTypes["a4-highgpu-8g"]}
	_, out, _ = preflight(t, noCPU, append(iowa, "--prices-out", file)...)
	// The recorded not-found body (compute-error-404-machinetype.json) names its own resource.
	assert.Regexp(t, `n2-standard-16 in us-central1 \(its vCPUs and memory cannot be read: The resource '[^']+' was not found \(HTTP 404\); plan keeps the shipped table's price of 2026-07-30\)`, finding(t, out, CheckPrices))

	// b200-spot's Managed Lustre instance in Iowa: priced from the catalog (the next test).
	lustre := withLustre("googleapis/lustre-instances-list-empty.json")
	code, out, _ = preflight(t, lustre, append(append(b200Spot, inIowa...), "--prices-out", file)...)
	assert.Equal(t, cmd.ExitOK, code, out)
	assert.NotContains(t, finding(t, out, CheckPrices), "without a price")
}

// The seam for Managed Lustre: preflight finds its service in the catalog, prices b200-spot's
// 500 MB/s-per-TiB capacity from its SKUs, and plan prices the Lustre line with the file, at the
// region's own price (no Iowa stand-in note).
func TestPricesOutReadsManagedLustre(t *testing.T) {
	date := plantest.PlanTime.Format(time.DateOnly)
	file := filepath.Join(t.TempDir(), "prices.json")
	args := append(append([]string{}, b200Spot...), inIowa...)
	code, out, calls := preflight(t, withLustre("googleapis/lustre-instances-list-empty.json"), append(args, "--prices-out", file)...)
	require.Equal(t, cmd.ExitOK, code, out)
	// 22 Compute Engine SKUs and 5 of Managed Lustre.
	assert.Contains(t, finding(t, out, CheckPrices), "wrote "+file+" with the list prices of a4-highgpu-8g/spot in us-central1 $39.63/hour, n2-standard-16 in us-central1 $0.78/hour, lustre-500 in us-central1 $0.34/GiB-month, from 27 SKUs")
	var billing []string
	for _, c := range calls {
		if c.Host == "cloudbilling.googleapis.com" {
			billing = append(billing, c.Method+" "+c.Path)
		}
	}
	assert.Equal(t, []string{
		"GET /v1/services/6F81-5844-456A/skus", "GET /v1/services/6F81-5844-456A/skus", "GET /v1/services/6F81-5844-456A/skus",
		"GET /v1/services", "GET /v1/services/0000-0000-1057/skus",
	}, billing, "the service list is read to find Managed Lustre, then its SKUs")

	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var f cost.File
	require.NoError(t, json.Unmarshal(data, &f))
	const source = "Cloud Billing Catalog API, services/6F81-5844-456A/skus (Compute Engine list prices in USD) and services/0000-0000-1057/skus (Managed Lustre list prices in USD), read by go run . preflight"
	assert.Equal(t, source, f.Name)
	require.Len(t, f.Prices, 3)
	assert.Equal(t, cost.FilePrice{SKU: cost.SKU{Name: "lustre-500", Region: "us-central1"}, USD: 0.34, Basis: `"Managed Lustre Capacity 500-Perf Iowa" at $0.34/GiBy.mo`}, f.Prices[2])

	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, plan.Main(append(args, "--prices", file), plantest.Env(plantest.RepoRoot(), &stdout, &stderr)), stderr.String())
	assert.Contains(t, stdout.String(), "prices of "+date+": "+source)
	lustreLine := lineWith(t, stdout.String(), "Lustre instance")
	// 18000 GiB × $0.34 = $6,120.00 a month.
	assert.Contains(t, lustreLine, "idle $6,120.00/month; $0.34 per GiB-month ("+date+")")
	assert.NotContains(t, lustreLine, "priced at", "the file prices the region itself")
}

// Where Managed Lustre cannot be priced from the catalog, the machines still are, and the reason
// says what plan does instead: outside Iowa it keeps the shipped table's Iowa price.
func TestPricesOutSaysWhyLustreIsNotPriced(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prices.json")
	shipped := withLustre("googleapis/lustre-instances-list-empty.json")
	shipped.machineTypes = ready.machineTypes

	// us-east1, as shipped: the recorded SKUs are Iowa's.
	_, out, _ := preflight(t, shipped, append(append([]string{}, b200Spot...), "--prices-out", file)...)
	assert.Contains(t, finding(t, out, CheckPrices), `lustre-500 in us-east1 (the catalog has no SKU "Managed Lustre Capacity 500-Perf …" for us-east1; plan keeps the shipped table's price of 2026-06-05 in us-central1)`)

	inIowaArgs := append(append(append([]string{}, b200Spot...), inIowa...), "--prices-out", file)
	for _, tc := range []struct {
		name     string
		services string
		reason   string
	}{
		// An empty list, as the REST reference answers one: `{}`.
		{"no such service", "googleapis/lustre-instances-list-empty.json",
			"lustre-500 in us-central1 (Managed Lustre's service cannot be found in the catalog: the catalog lists no service named with \"Lustre\"; plan keeps the shipped table's price of 2026-06-05)"},
		{"the list refused", "googleapis/preflight/cloudbilling-error-403-disabled.json",
			"lustre-500 in us-central1 (Managed Lustre's service cannot be found in the catalog: Cloud Billing API has not been used in project 123456789012 before or it is disabled."},
	} {
		p := shipped
		p.catalogServices = tc.services
		code, out, _ := preflight(t, p, inIowaArgs...)
		assert.Equal(t, cmd.ExitOK, code, "%s: the machines are priced all the same\n%s", tc.name, out)
		line := finding(t, out, CheckPrices)
		assert.Contains(t, line, "with the list prices of a4-highgpu-8g/spot in us-central1 $39.63/hour, n2-standard-16 in us-central1 $0.78/hour, from 22 SKUs", tc.name)
		assert.Contains(t, line, tc.reason, tc.name)
	}

	// The service found, none of its SKUs the tier's (a page of Compute Engine SKUs in its
	// place): the file holds the machines alone, and its source names Compute Engine alone.
	p := shipped
	p.lustreSKUs = catalog["page3"] // its last page: no next page token
	_, out, _ = preflight(t, p, inIowaArgs...)
	assert.Contains(t, finding(t, out, CheckPrices), `lustre-500 in us-central1 (the catalog has no SKU "Managed Lustre Capacity 500-Perf …" for us-central1; plan keeps the shipped table's price of 2026-06-05)`)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var f cost.File
	require.NoError(t, json.Unmarshal(data, &f))
	assert.Equal(t, CatalogSource, f.Name, "no price came from Managed Lustre's service")
	assert.Len(t, f.Prices, 2)

	// The service found, its SKUs refused.
	p = shipped
	p.lustreSKUs = "googleapis/preflight/cloudbilling-error-403-disabled.json"
	_, out, _ = preflight(t, p, inIowaArgs...)
	assert.Contains(t, finding(t, out, CheckPrices), "lustre-500 in us-central1 (Managed Lustre's SKUs (services/0000-0000-1057) cannot be read: Cloud Billing API has not been used")
}

// lineWith is the one line of out that holds s.
func lineWith(t *testing.T, out, s string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	t.Fatalf("no line with %q in:\n%s", s, out)
	return ""
}
