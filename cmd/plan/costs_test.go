package plan_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/cmd/plan"
	"gke-rl/internal/cost"
	"gke-rl/test/plantest"
)

// The tree prints the costs after the outputs, before the closing count: both totals, one line
// per item, each price list's date, and what is left out.
func TestCLITreeShowsTheCosts(t *testing.T) {
	for _, stack := range plantest.Stacks {
		t.Run(stack, func(t *testing.T) {
			code, out, errOut := plantest.Main(t, "--stack", stack)
			require.Equal(t, cmd.ExitOK, code, errOut)
			_, costs, found := strings.Cut(out, "Costs in USD at list prices, before discounts and taxes (")
			require.True(t, found, "no costs section")
			assert.Contains(t, costs, "prices of 2026-07-30: Cloud Billing Catalog list prices")
			assert.Regexp(t, `\n  per hour while training  (unknown: no price for [A-Za-z ,]+ \(plan --prices FILE adds them\); the rest: )?\$[\d,]+\.\d\d\n`, costs, "the unknown items first: the known part is not the cost")
			assert.Regexp(t, `\n  per month while idle     (unknown: .* the rest: )?\$[\d,]+\.\d\d`, costs)
			assert.Contains(t, costs, "prices of 2026-12-01: GKE pricing page (cluster management fee); current prices: https://cloud.google.com/skus):\n")
			assert.Regexp(t, `\n    CPU nodes +1 × n2-standard-16, on-demand, `, costs)
			assert.Contains(t, costs, "\n  not counted: network egress and Cloud NAT")
			assert.Regexp(t, `\n\d+ resources to create`, costs, "the count still closes the plan")
		})
	}
}

// The spot stacks' GPU nodes have a dated price: the item that is most of the bill is a figure,
// with its source named; b200-spot's Managed Lustre in us-east1 is priced at Iowa's recorded
// price (18000 GiB × $0.34 = $6,120.00 a month), saying whose it is.
func TestTheShippedSpotStacksPriceTheirGPUNodes(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Regexp(t, `
    Lustre instance +18000 GiB at 500 MB/s per TiB +training \$8\.38/h, idle \$6,120\.00/month; \$0\.34 per GiB-month \(2026-06-05\); billed by provisioned capacity, full or empty; priced at us-central1's list price: none of us-east1 is recorded
`, out)
	for stack, unknown := range map[string][]string{"smoke": nil, "b200-spot": nil} {
		t.Run(stack, func(t *testing.T) {
			r := plantest.Plan(t, stack)
			assert.Equal(t, unknown, r.Costs.TrainingPerHour.Unknown)
			code, out, errOut := plantest.Main(t, "--stack", stack)
			require.Equal(t, cmd.ExitOK, code, errOut)
			assert.Regexp(t, `\n    GPU nodes +\d+ × a4-highgpu-8g, spot, us-east1-b +training \$[\d,]+\.\d\d/h, idle \$0\.00/month; \$32\.6064 per hour \(2026-12-05\)`, out)
			assert.Contains(t, out, "prices of 2026-12-05: SkyPilot's GCP catalog, github.com/skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv at commit 006059e")
		})
	}
}

// The smoke stack is the cheapest: one spot A4 while it trains, one CPU node, its disk and a
// bucket.
func TestSmokeStackCosts(t *testing.T) {
	r := plantest.Plan(t, "smoke")
	require.True(t, r.Costs.TrainingPerHour.Complete(), r.Costs.TrainingPerHour.String())
	// a4-highgpu-8g spot in us-east1 at $32.6064 an hour, n2-standard-16 at $0.776944, 300 GiB
	// of pd-balanced at $0.10 a month, GKE's $0.10 an hour, and a few GiB of checkpoints at $0.02
	// a month.
	assert.InDelta(t, 32.6064+0.776944+300*0.1/730+0.1, r.Costs.TrainingPerHour.KnownUSD, 0.01)
	assert.InDelta(t, (0.776944+0.1)*730+30, r.Costs.IdlePerMonth.KnownUSD, 1)
	assert.True(t, r.Costs.IdlePerMonth.Complete(), "the spot GPU pool is at zero while idle: the idle month is all known")
}

// A price no table has is null in the JSON plan, not 0: A4 on demand, what a reservation of B200
// bills, has no recorded price and no stand-in (cost.GPUStandInRegions).
func TestCLIJSONCarriesTheCosts(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--config", "gpu.provisioning=reservation", "--config", "gpu.reservation=my-res", "--json")
	require.Equal(t, cmd.ExitOK, code, errOut)
	var doc struct {
		Costs struct {
			Currency        string `json:"currency"`
			Sources         []struct{ Date, Source string }
			TrainingPerHour struct {
				KnownUSD float64  `json:"knownUSD"`
				Unknown  []string `json:"unknown"`
			} `json:"trainingPerHour"`
			Lines []struct {
				Item               string   `json:"item"`
				SKU                string   `json:"sku"`
				Region             string   `json:"region"`
				UnitUSD            *float64 `json:"unitUSD"`
				IdlePerMonthUSD    *float64 `json:"idlePerMonthUSD"`
				TrainingPerHourUSD *float64 `json:"trainingPerHourUSD"`
			} `json:"lines"`
			Excluded []string `json:"excluded"`
		} `json:"costs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	c := doc.Costs
	assert.Equal(t, "USD", c.Currency)
	require.Len(t, c.Sources, 2, "the catalog and GKE's fee")
	assert.Equal(t, "2026-07-30", c.Sources[0].Date)
	assert.Equal(t, "2026-12-01", c.Sources[1].Date)
	assert.Contains(t, c.TrainingPerHour.Unknown, "GPU nodes")
	require.NotEmpty(t, c.Lines)
	gpu := c.Lines[0]
	assert.Equal(t, "GPU nodes", gpu.Item)
	assert.Equal(t, "a4-highgpu-8g", gpu.SKU)
	assert.Equal(t, "us-east1", gpu.Region)
	assert.Nil(t, gpu.UnitUSD, "an unknown price is null, not 0")
	assert.Nil(t, gpu.IdlePerMonthUSD, "a reservation bills while idle, at an unknown price")
	assert.NotEmpty(t, c.Excluded)
}

// A price file fills in what the shipped table lacks, and the plan names both lists' dates.
func TestCLIPricesFileAddsPrices(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"date": "2026-11-30", "source": "my billing console", "prices": [
		{"sku": "a4-highgpu-8g/spot", "region": "us-east1", "usd": 10},
		{"sku": "gke-cluster", "region": "us-east1", "usd": 0.1}]}`), 0o600))
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--prices", file)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "(prices of 2026-11-30: my billing console; prices of 2026-07-30: ")
	assert.Contains(t, out, "GKE cluster fee  1 cluster")
	assert.Regexp(t, `\n  per hour while training  \$10\.92\n`, out, "every item priced: a total, not a bound")
	assert.Regexp(t, `\n    GPU nodes +1 × a4-highgpu-8g, spot, us-east1-b +training \$10\.00/h, idle \$0\.00/month; \$10 per hour \(2026-11-30\)`, out)

	assert.NotContains(t, errOut, "prices no line", "every entry priced a line")

	// An entry that prices nothing is named, with the lines it could have meant.
	typo := filepath.Join(t.TempDir(), "typo.json")
	require.NoError(t, os.WriteFile(typo, []byte(`{"date": "2026-11-30", "source": "my billing console", "prices": [
		{"sku": "a4-highgpu-8g-spot", "region": "us-east1", "usd": 10},
		{"sku": "a4-highgpu-8g/spot", "region": "us-central1", "usd": 10},
		{"sku": "tpu-v5p", "region": "us-east1", "usd": 4}]}`), 0o600))
	code, _, errOut = plantest.Main(t, "--stack", "smoke", "--prices", typo)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, errOut, "warning: --prices "+typo+`: a4-highgpu-8g-spot in us-east1 prices no line of this stack's bill, and is ignored; did you mean "a4-highgpu-8g/spot" in us-east1?`)
	assert.Contains(t, errOut, "warning: --prices "+typo+`: a4-highgpu-8g/spot in us-central1 prices no line of this stack's bill, and is ignored; did you mean "a4-highgpu-8g/spot" in us-east1?`)
	assert.Contains(t, errOut, "warning: --prices "+typo+`: tpu-v5p in us-east1 prices no line of this stack's bill, and is ignored`+"\n")

	// A price of another unit (per month for a machine) is named; the plan still uses it.
	dear := filepath.Join(t.TempDir(), "dear.json")
	require.NoError(t, os.WriteFile(dear, []byte(`{"date": "2026-11-30", "source": "my billing console", "prices": [
		{"sku": "a4-highgpu-8g/spot", "region": "us-east1", "usd": 28930}]}`), 0o600))
	code, _, errOut = plantest.Main(t, "--stack", "smoke", "--prices", dear)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, errOut, "warning: --prices "+dear+": a4-highgpu-8g/spot in us-east1 (GPU nodes) at $28930 per hour is above any list price of its kind ($200): a typo, or a price of another unit?")

	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"date": "yesterday", "source": "x", "prices": []}`), 0o600))
	code, out, errOut = plantest.Main(t, "--stack", "smoke", "--prices", bad)
	assert.Equal(t, cmd.ExitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `error: --prices: `+bad+`: date "yesterday": want the day the prices were read, as YYYY-MM-DD`)
}

// The README's costs sample is what the plan prints for smoke.
// A price file that prices every line is the plan's one source: its lines do not repeat its
// date, which the heading gives once. 10 + 0.5 + 300 GiB × 0.1 / 730 + 15 GiB × 0.02 / 730 + 0.1
// = $10.64 an hour.
func TestOnePriceListNamesItsDateOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"date": "2026-11-30", "source": "my billing console", "prices": [
		{"sku": "a4-highgpu-8g/spot", "region": "us-east1", "usd": 10},
		{"sku": "n2-standard-16", "region": "us-east1", "usd": 0.5},
		{"sku": "pd-balanced", "region": "us-east1", "usd": 0.1},
		{"sku": "gcs-standard", "region": "us-east1", "usd": 0.02},
		{"sku": "gke-cluster", "region": "us-east1", "usd": 0.1}]}`), 0o600))
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--prices", file)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "(prices of 2026-11-30: my billing console; current prices: ")
	assert.Regexp(t, `\n  per hour while training  \$10\.64\n`, out)
	assert.Regexp(t, `\n    GPU nodes +1 × a4-highgpu-8g, spot, us-east1-b +training \$10\.00/h, idle \$0\.00/month; \$10 per hour; spot prices`, out)
	assert.NotContains(t, out, "(2026-11-30)")
}

func TestREADMECostsSampleIsTheSmokePlans(t *testing.T) {
	r := plantest.Plan(t, "smoke")
	readme, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "README.md"))
	require.NoError(t, err)
	most, ok := plan.MostARunCosts(r.Costs, r.Blueprint.Deadline)
	require.True(t, ok)
	sample := "```\n  per hour while training  " + r.Costs.TrainingPerHour.String() +
		"\n  per month while idle     " + r.Costs.IdlePerMonth.String() +
		"\n  at most a run            " + most + "\n```"
	assert.Contains(t, string(readme), sample)
	// The prose, wrapped anywhere.
	prose := strings.Join(strings.Fields(string(readme)), " ")
	assert.Contains(t, prose, "from the Cloud Billing Catalog of "+cost.CatalogSource.Date)
	assert.Contains(t, prose, "from SkyPilot's published catalog (read "+cost.GPUSource.Date+")")
	// The first run's spend, in its own words: smoke's hour less its GPU node, then the GPU node.
	gpu := r.Costs.Lines[0]
	require.Equal(t, "GPU nodes", gpu.Item)
	assert.Contains(t, prose, "It bills "+cost.Dollars(r.Costs.TrainingPerHour.KnownUSD-gpu.TrainingPerHour.USD)+" an hour while it exists (list prices of "+cost.CatalogSource.Date+"), plus "+cost.Dollars(gpu.TrainingPerHour.USD)+" an hour for the spot `a4-highgpu-8g`")
}

// The most a run can cost: its training rate (every item of the bill, the storage's hours with
// it) for as long as its deadline lets it run. smoke: a deadline of 3h per attempt, KubeRay
// restarting the clock on each of 2 attempts (job.backoffLimit 1): 6h × the hourly total.
func TestThePlanSaysTheMostARunCanCost(t *testing.T) {
	r := plantest.Plan(t, "smoke")
	hourly := r.Costs.TrainingPerHour.KnownUSD
	require.True(t, r.Costs.TrainingPerHour.Complete())
	code, out, errOut := plantest.Main(t, "--stack", "smoke")
	require.Equal(t, cmd.ExitOK, code, errOut)
	want := fmt.Sprintf("  at most a run            %s, for its longest, 6h: 2 attempts of 3h (per attempt) at %s an hour\n", cost.Dollars(6*hourly), cost.Dollars(hourly))
	assert.Contains(t, out, want)
	assert.Contains(t, out, "; at most a run: "+cost.Dollars(6*hourly)+", for its longest, 6h", "the summary says it too")

	// On the long-lived cluster the deadline bounds the run, retries included: once.
	// h200-reserved: its hourly total (us-central1's A3 Ultra standing in) for 82.8h.
	_, out, _ = plantest.Main(t, "--stack", "h200-reserved")
	assert.Contains(t, out, "\n  at most a run            $14,457.88, for its longest, 82.8h (for the run) at $174.61 an hour\n")
	// Without the GPU nodes' price (a B200 reservation) the bound says what it lacks.
	_, out, _ = plantest.Main(t, "--stack", "smoke", "--config", "gpu.provisioning=reservation", "--config", "gpu.reservation=my-res")
	assert.Contains(t, out, "\n  at most a run            unknown: no price for GPU nodes; the rest: $5.05, for its longest, 5.5h (for the run)\n")

	// A deadline of the user's, or a queue's own per experiment, derives no bound here.
	_, out, _ = plantest.Main(t, "--stack", "smoke", "--config", "job.activeDeadlineSeconds=7200")
	assert.NotContains(t, out, "at most a run")
}

// The README's token commands are the ones `pulumi stack output tokenCommands` prints, the W&B
// netrc wrapper included.
func TestREADMETokenCommandsAreTheOutputs(t *testing.T) {
	r := plantest.Plan(t, "b200-spot", "gcp:project=my-project-id", "tokens.huggingFace=true", "tokens.wandb=true")
	commands, ok := r.Outputs["tokenCommands"].([]string)
	require.True(t, ok, "%T", r.Outputs["tokenCommands"])
	require.Len(t, commands, 2)
	readme, err := os.ReadFile(filepath.Join(plantest.RepoRoot(), "README.md"))
	require.NoError(t, err)
	for _, c := range commands {
		assert.Contains(t, string(readme), "\n"+c+"\n")
	}
}

// A reservation's machines bill at the on-demand rate, training or idle; A3 Ultra's on-demand
// price is the sum of its two catalog rows in us-central1, 12.266 + 74.49392 = 86.75992 an
// hour, printed as that (not the sum's float noise), for 2 nodes: $173.52 an hour.
func TestAReservationIsPricedAtTheOnDemandRate(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "h200-reserved", "--config", "gcp:region=us-central1", "--config", "zone=us-central1-b")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "training $173.52/h, idle $126,669.48/month; $86.75992 per hour (2026-12-05); a reservation bills its machines whether they run or not, at the on-demand rate less any commitment (which only your billing account knows)\n")

	// In us-south1 (h200-reserved's region) the catalog has no A3 Ultra price: us-central1's
	// stands in, and the line says so; idle or training, the two nodes bill the same.
	code, out, errOut = plantest.Main(t, "--stack", "h200-reserved")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "training $173.52/h, idle $126,669.48/month; $86.75992 per hour (2026-12-05); a reservation bills its machines whether they run or not, at the on-demand rate less any commitment (which only your billing account knows); priced at us-central1's list price: none of us-south1 is recorded\n")
	assert.NotContains(t, out, "unknown", "every line of h200-reserved is priced")
}

// The most a queue can cost, worked by hand from smoke's price lines with two experiments on a
// GPU pool of one node (gpu.maxNodes=1): an experiment holds its node, $32.6064 an hour, and the
// stack's other training lines as if it ran alone: the CPU node $0.776944, 300 GiB of disk at
// $0.1 a GiB-month (/730 = $0.0410959), 30 GiB of bucket at $0.02 (/730 = $0.00082192) and the
// cluster's $0.1: $33.5252618 an hour, for its deadline's 2 attempts of 3h: $201.15157. The
// queue: both, one after another: 12h, $402.30314.
func TestThePlanSaysTheMostTheQueueCanCost(t *testing.T) {
	two := []string{"--config", "gpu.maxNodes=1", "--config", "jobs.first.maxSteps=4", "--config", "jobs.second.maxSteps=4"}
	code, out, errOut := plantest.Main(t, append([]string{"--stack", "smoke"}, two...)...)
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Regexp(t, `\n  runs +first +priority 0 +8 GPUs \(1 node\)  GPU nodes \$32\.61/h  at most \$201\.15 \(6h\)\n`, out)
	assert.Regexp(t, `\n  waits +second +priority 0 +8 GPUs \(1 node\)  at most \$201\.15 \(6h\)\n`, out)
	queueBound := "$402.30, if each experiment takes all its deadline allows (12h of runs in all, each with its GPU nodes and the stack's other lines; fewer hours when they run at once)"
	assert.Contains(t, out, "\n  at most the queue: "+queueBound+"\n")
	assert.Contains(t, out, "\n  at most the queue        "+queueBound+"\n")
	assert.Contains(t, out, "; at most the queue: "+queueBound, "the summary says it too")
	assert.NotContains(t, out, "at most a run", "no single run")

	// A stopped experiment costs nothing: the queue is the first alone. The bucket holds the
	// stopped one's checkpoints still (30 GiB): $201.15.
	_, out, _ = plantest.Main(t, append([]string{"--stack", "smoke", "--config", "jobs.second.enabled=false"}, two...)...)
	assert.Contains(t, out, "\n  at most the queue: $201.15, if each experiment takes all its deadline allows (6h of runs in all,")

	// An experiment of two nodes holds both: 2 × $32.6064, and the other lines with a bucket of
	// its 15 GiB ($0.00041096): $66.1312509 an hour, × 6h = $396.79.
	_, out, _ = plantest.Main(t, "--stack", "smoke", "--config", "gpu.maxNodes=2", "--config", "jobs.big.nodes=2", "--config", "jobs.big.maxSteps=4")
	assert.Regexp(t, `\n  runs +big +priority 0 +16 GPUs \(2 nodes\)  GPU nodes \$65\.21/h  at most \$396\.79 \(6h\)\n`, out)

	// Without the GPU node's price the bound is unknown, and says whose.
	r := plantest.Plan(t, "smoke", "gpu.maxNodes=1", "jobs.first.maxSteps=4", "jobs.second.maxSteps=4")
	noGPU := r.Costs
	noGPU.Lines = slices.Clone(noGPU.Lines)
	noGPU.Lines[0].Price = nil
	_, _, unknown, ok := plan.QueueMost(noGPU, r.Blueprint.Run.Experiments)
	assert.False(t, ok)
	assert.Equal(t, []string{"first", "second"}, unknown)
}

// `--compare` says how a change moves the bounds: a third experiment adds its 6h (the bucket's
// share grows by its checkpoints, 15 GiB: $0.00041096 an hour more for every run).
func TestCompareSaysHowTheBoundsMove(t *testing.T) {
	before := plantest.PlanFile(t, "smoke", nil, "gpu.maxNodes=1", "jobs.first.maxSteps=4", "jobs.second.maxSteps=4")
	code, out, errOut := plantest.Main(t, "--stack", "smoke", "--compare", before, "--config", "gpu.maxNodes=1",
		"--config", "jobs.first.maxSteps=4", "--config", "jobs.second.maxSteps=4", "--config", "jobs.third.maxSteps=4")
	require.Equal(t, cmd.ExitOK, code, errOut)
	// 3 × 6h × ($33.5252618 + $0.00041096) = $603.46.
	assert.Contains(t, out, "\nAt most the queue: $603.46, from $402.30 (+50 %).\n")

	single := plantest.PlanFile(t, "smoke", nil)
	_, out, _ = plantest.Main(t, "--stack", "smoke", "--compare", single)
	assert.NotContains(t, out, "At most", "an unmoved bound is not repeated")
	_, out, _ = plantest.Main(t, "--stack", "smoke", "--compare", single, "--config", "job.activeDeadlineSeconds=7200")
	assert.Contains(t, out, "\nAt most a run: no bound now (the earlier plan's: $201.15).\n", "a deadline of the user's derives no bound")

	// An earlier plan without bounds (written before plans carried them) gives none to compare.
	old := filepath.Join(t.TempDir(), "old.json")
	doc, err := os.ReadFile(single)
	require.NoError(t, err)
	doc = []byte(strings.Replace(string(doc), `"mostARunUSD"`, `"formerKey"`, 1))
	require.NoError(t, os.WriteFile(old, doc, 0o600))
	_, out, _ = plantest.Main(t, "--stack", "smoke", "--compare", old)
	assert.Contains(t, out, "\nAt most a run: $201.15 (the earlier plan gave no bound).\n")
}
