package plan

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/internal/cost"
)

// CurrentPricesURL is where a user checks today's prices of a SKU.
const CurrentPricesURL = "https://cloud.google.com/skus"

// writeCosts prints the estimate: the two totals, the most the run or the queue can cost (when
// deadlines bound them), then one line per item of the bill.
func writeCosts(w io.Writer, e cost.Estimate, run infra.RunPlan, d *infra.RunDeadline) {
	fmt.Fprintf(w, "Costs in USD at list prices, before discounts and taxes (%s; current prices: %s):\n", sourcesText(e.Sources), CurrentPricesURL)
	fmt.Fprintf(w, "  per hour while training  %s\n", e.TrainingPerHour)
	fmt.Fprintf(w, "  per month while idle     %s\n", e.IdlePerMonth)
	if most, ok := MostARunCosts(e, d); ok {
		fmt.Fprintf(w, "  at most a run            %s\n", most)
	}
	if run.Queue != nil {
		fmt.Fprintf(w, "  at most the queue        %s\n", queueMostText(e, run.Experiments))
	}
	itemWidth, detailWidth := 0, 0
	for _, l := range e.Lines {
		itemWidth = max(itemWidth, len(l.Item))
		detailWidth = max(detailWidth, len([]rune(l.Detail))) // fmt pads by runes
	}
	for _, l := range e.Lines {
		price := "no price for " + l.SKU.String()
		if l.Price != nil {
			// To a millionth of a dollar: a machine priced as the sum of two catalog rows
			// (A3 Ultra's host and GPUs) would print the sum's binary noise otherwise.
			price = "$" + strconv.FormatFloat(math.Round(l.Price.USD*1e6)/1e6, 'f', -1, 64) + " per " + string(l.Unit)
			if len(e.Sources) > 1 {
				price += " (" + l.Price.Source.Date + ")"
			}
		}
		line := fmt.Sprintf("    %-*s  %-*s  training %s/h, idle %s/month; %s", itemWidth, l.Item,
			detailWidth, l.Detail, l.TrainingPerHour, l.IdlePerMonth, price)
		if l.Note != "" {
			line += "; " + l.Note
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "  not counted: %s\n", strings.Join(e.Excluded, ", "))
}

// MostARunCosts is what the run costs if it takes all its deadline allows (infra.RunDeadline:
// the deadline, or each attempt's): the training rate, every item of the bill with the storage's
// hours, for that long. ok is false when no derived deadline bounds the run (none, a queue's
// experiments, or job.activeDeadlineSeconds set).
func MostARunCosts(e cost.Estimate, d *infra.RunDeadline) (string, bool) {
	if d == nil {
		return "", false
	}
	longest := d.Longest()
	how := fmt.Sprintf("for its longest, %s (%s)", infra.Hours(longest), d.Scope)
	if d.Scope == infra.PerAttempt {
		how = fmt.Sprintf("for its longest, %s: %d attempts of %s (%s)", infra.Hours(longest), d.Attempts, infra.Hours(time.Duration(d.Seconds)*time.Second), d.Scope)
	}
	if !e.TrainingPerHour.Complete() {
		return fmt.Sprintf("unknown: no price for %s; the rest: %s, %s", strings.Join(e.TrainingPerHour.Unknown, ", "), cost.Dollars(e.TrainingPerHour.KnownUSD*longest.Hours()), how), true
	}
	return fmt.Sprintf("%s, %s at %s an hour", cost.Dollars(e.TrainingPerHour.KnownUSD*longest.Hours()), how, e.TrainingPerHour), true
}

// mostARunUSD is MostARunCosts's amount; ok is false when it is unknown or nothing bounds the
// run.
func mostARunUSD(e cost.Estimate, d *infra.RunDeadline) (float64, bool) {
	if d == nil || !e.TrainingPerHour.Complete() {
		return 0, false
	}
	return e.TrainingPerHour.KnownUSD * d.Longest().Hours(), true
}

// CostShift says how an update moves the most a run and the queue can cost, against an earlier
// plan that carried them: a line for each bound that moved, appeared or went.
func CostShift(before *EarlierPlan, after *offline.Result) []string {
	now := boundsOf(after.Costs, after.Blueprint.Run, after.Blueprint.Deadline)
	var lines []string
	for _, b := range []struct {
		what    string
		was, is *float64
	}{
		{"a run", before.Costs.MostARunUSD, now.MostARunUSD},
		{"the queue", before.Costs.MostTheQueueUSD, now.MostTheQueueUSD},
	} {
		switch {
		case b.was == nil && b.is == nil:
			continue
		case b.was == nil:
			lines = append(lines, fmt.Sprintf("At most %s: %s (the earlier plan gave no bound).", b.what, cost.Dollars(*b.is)))
		case b.is == nil:
			lines = append(lines, fmt.Sprintf("At most %s: no bound now (the earlier plan's: %s).", b.what, cost.Dollars(*b.was)))
		case cost.Dollars(*b.was) == cost.Dollars(*b.is):
			continue // unmoved: nothing to say
		default:
			lines = append(lines, fmt.Sprintf("At most %s: %s, from %s (%+.0f %%).", b.what, cost.Dollars(*b.is), cost.Dollars(*b.was), (*b.is / *b.was - 1)*100))
		}
	}
	return lines
}

// sourcesText names the price lists an estimate used, with their dates.
func sourcesText(sources []cost.Source) string {
	if len(sources) == 0 {
		sources = []cost.Source{cost.CatalogSource}
	}
	var parts []string
	for _, s := range sources {
		parts = append(parts, "prices of "+s.Date+": "+s.Name)
	}
	return strings.Join(parts, "; ")
}

// jsonCosts is the estimate as the JSON plan carries it; an unknown amount is null.
type jsonCosts struct {
	Currency        string         `json:"currency"`
	Sources         []cost.Source  `json:"sources"`
	CurrentPrices   string         `json:"currentPrices"`
	TrainingPerHour cost.Total     `json:"trainingPerHour"`
	IdlePerMonth    cost.Total     `json:"idlePerMonth"`
	Lines           []jsonCostLine `json:"lines"`
	Excluded        []string       `json:"excluded"`
	costBounds
}

// costBounds are the bounds the plan prints (MostARunCosts, QueueMost), as the JSON plan
// carries them and `--compare` reads them from an earlier one; null when unknown or when the
// stack has no such run or queue.
type costBounds struct {
	MostARunUSD     *float64 `json:"mostARunUSD"`
	MostTheQueueUSD *float64 `json:"mostTheQueueUSD"`
}

// boundsOf are an estimate's bounds for the run's deadline d and the queue's experiments.
func boundsOf(e cost.Estimate, run infra.RunPlan, d *infra.RunDeadline) costBounds {
	var b costBounds
	if usd, ok := mostARunUSD(e, d); ok {
		b.MostARunUSD = &usd
	}
	if run.Queue != nil {
		if usd, _, _, ok := QueueMost(e, run.Experiments); ok {
			b.MostTheQueueUSD = &usd
		}
	}
	return b
}

type jsonCostLine struct {
	Item   string `json:"item"`
	Detail string `json:"detail"`
	// SKU and its region name the price (`sku`, `region`), as a price file gives it.
	cost.SKU
	Unit             string   `json:"unit"`
	TrainingQuantity *float64 `json:"trainingQuantity"`
	IdleQuantity     *float64 `json:"idleQuantity"`
	UnitUSD          *float64 `json:"unitUSD"`
	PriceDate        string   `json:"priceDate,omitempty"`
	TrainingPerHour  *float64 `json:"trainingPerHourUSD"`
	IdlePerMonth     *float64 `json:"idlePerMonthUSD"`
	Note             string   `json:"note,omitempty"`
}

func costsJSON(e cost.Estimate, run infra.RunPlan, d *infra.RunDeadline) jsonCosts {
	total := func(t cost.Total) cost.Total {
		if t.Unknown == nil {
			t.Unknown = []string{}
		}
		t.KnownUSD = round2(t.KnownUSD)
		return t
	}
	amount := func(a cost.Amount) *float64 {
		if !a.Known {
			return nil
		}
		v := round2(a.USD)
		return &v
	}
	quantity := func(l cost.Costed, q float64) *float64 {
		if l.UnknownQuantity {
			return nil
		}
		return &q
	}
	sources := e.Sources
	if sources == nil {
		sources = []cost.Source{}
	}
	doc := jsonCosts{
		Currency: "USD", Sources: sources, CurrentPrices: CurrentPricesURL,
		TrainingPerHour: total(e.TrainingPerHour), IdlePerMonth: total(e.IdlePerMonth),
		Lines: []jsonCostLine{}, Excluded: e.Excluded, costBounds: boundsOf(e, run, d),
	}
	for _, l := range e.Lines {
		jl := jsonCostLine{
			Item: l.Item, Detail: l.Detail, SKU: l.SKU, Unit: string(l.Unit),
			TrainingQuantity: quantity(l, l.Training), IdleQuantity: quantity(l, l.Idle),
			TrainingPerHour: amount(l.TrainingPerHour), IdlePerMonth: amount(l.IdlePerMonth), Note: l.Note,
		}
		if l.Price != nil {
			usd := l.Price.USD
			jl.UnitUSD, jl.PriceDate = &usd, l.Price.Source.Date
		}
		doc.Lines = append(doc.Lines, jl)
	}
	return doc
}

// round2 rounds to cents, so that the JSON reads as money.
func round2(usd float64) float64 { return math.Round(usd*100) / 100 }

// ExperimentMost is the most one queued experiment can cost if it takes all its deadline allows
// (infra.RunDeadline.Longest: deadline × attempts): its own GPU nodes, and the stack's other
// training lines (CPU nodes, disks, storage, the cluster's fee) as if it ran alone, for that
// long. ok is false when it has no deadline or a price is missing.
func ExperimentMost(e cost.Estimate, x infra.ExperimentPlan) (usd float64, longest time.Duration, ok bool) {
	if x.Stopped || x.Deadline == nil || !e.TrainingPerHour.Complete() {
		return 0, 0, false
	}
	perNode := gpuNodeHour(e)
	if !perNode.known {
		return 0, 0, false
	}
	rest := e.TrainingPerHour.KnownUSD
	for _, l := range e.Lines {
		if l.Item == "GPU nodes" {
			rest -= l.TrainingPerHour.USD
		}
	}
	longest = x.Deadline.Longest()
	return (perNode.usd*float64(x.Nodes) + rest) * longest.Hours(), longest, true
}

// QueueMost is the most the whole queue can cost: each running or waiting experiment's
// ExperimentMost, as if they ran one after another (the stack's other lines counted for each;
// experiments that run at once share them, so it is a bound, not a forecast). ok is false when
// an experiment's bound is unknown, which unknown names.
func QueueMost(e cost.Estimate, xs []infra.ExperimentPlan) (usd float64, longest time.Duration, unknown []string, ok bool) {
	for _, x := range xs {
		if x.Stopped {
			continue
		}
		u, h, known := ExperimentMost(e, x)
		if !known {
			unknown = append(unknown, x.Name)
			continue
		}
		usd += u
		longest += h
	}
	return usd, longest, unknown, len(unknown) == 0
}

// queueMostText is the queue's bound as the plan prints it.
func queueMostText(e cost.Estimate, xs []infra.ExperimentPlan) string {
	usd, longest, unknown, ok := QueueMost(e, xs)
	if !ok {
		return fmt.Sprintf("unknown: no deadline or no price for %s", strings.Join(unknown, ", "))
	}
	return fmt.Sprintf("%s, if each experiment takes all its deadline allows (%s of runs in all, each with its GPU nodes and the stack's other lines; fewer hours when they run at once)",
		cost.Dollars(usd), infra.Hours(longest))
}
