package plan

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"gke-rl/infra"
	"gke-rl/internal/cost"
)

// CurrentPricesURL is where a user checks today's prices of a SKU.
const CurrentPricesURL = "https://cloud.google.com/skus"

// writeCosts prints the estimate: the two totals, the most the run can cost (when its deadline
// bounds it), then one line per item of the bill.
func writeCosts(w io.Writer, e cost.Estimate, d *infra.RunDeadline) {
	fmt.Fprintf(w, "Costs in USD at list prices, before discounts and taxes (%s; current prices: %s):\n", sourcesText(e.Sources), CurrentPricesURL)
	fmt.Fprintf(w, "  per hour while training  %s\n", e.TrainingPerHour)
	fmt.Fprintf(w, "  per month while idle     %s\n", e.IdlePerMonth)
	if most, ok := MostARunCosts(e, d); ok {
		fmt.Fprintf(w, "  at most a run            %s\n", most)
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

func costsJSON(e cost.Estimate) jsonCosts {
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
		Lines: []jsonCostLine{}, Excluded: e.Excluded,
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
