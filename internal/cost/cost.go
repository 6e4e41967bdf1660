// Package cost estimates what a stack costs from dated list prices: per hour while the GPU
// nodes train, and per month while they are idle. It is pure: the bill of materials comes from
// the resolved configuration, the prices from a Table, and a price the table lacks is reported
// as unknown, never guessed.
package cost

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// HoursPerMonth is the month Google's price lists use (730 hours).
const HoursPerMonth = 730

// Unit is what a unit price is per.
type Unit string

const (
	// PerHour is per machine per hour.
	PerHour Unit = "hour"
	// PerGiBMonth is per GiB of provisioned or stored capacity per month.
	PerGiBMonth Unit = "GiB-month"
)

// SKU names one priced thing in one region.
type SKU struct {
	// Name is a machine type ("n2-standard-16"), a machine type and its provisioning model
	// ("a4-highgpu-8g/spot", "a4-highgpu-8g/flex-start"; on-demand and reservations have no
	// suffix), or a storage product ("pd-balanced", "gcs-standard", "lustre-500").
	Name   string `json:"sku"`
	Region string `json:"region"`
}

func (s SKU) String() string { return s.Name + " in " + s.Region }

// Line is one item of a stack's bill of materials.
type Line struct {
	// Item says what it is ("GPU nodes"); Detail how many of what, where.
	Item, Detail string
	SKU          SKU
	Unit         Unit
	// Training and Idle are the quantities billed while the GPU nodes train and while the stack
	// is idle (GPU pool at its minimum): machines for PerHour, GiB for PerGiBMonth.
	Training, Idle float64
	// UnknownQuantity is set when the quantity itself is unknown (a bucket's content whose
	// model size the planner cannot tell).
	UnknownQuantity bool
	// Note is said next to the line.
	Note string
	// StandIn is a SKU whose price stands in for the line's own when that has none (Managed
	// Lustre, whose prices are recorded for one region): the estimate then says whose price it
	// is. Nil: an unpriced line is unknown.
	StandIn *SKU
}

// Bill is a stack's bill of materials.
type Bill struct {
	Lines []Line
	// Excluded names what the estimate leaves out.
	Excluded []string
}

// Price is a unit price and where it comes from.
type Price struct {
	USD    float64
	Source *Source
}

// Source is a dated price list.
type Source struct {
	// Date is when the prices were read (YYYY-MM-DD).
	Date string `json:"date"`
	// Name says where they were read, for a user to check.
	Name string `json:"source"`
}

// Table is a set of unit prices by SKU.
type Table struct {
	Prices map[SKU]Price
}

// AnyRegion is the region of a price that is the same in every region (GKE's cluster fee).
const AnyRegion = "*"

// Lookup returns the unit price of a SKU: its region's, or the one of every region.
func (t Table) Lookup(s SKU) (Price, bool) {
	if p, ok := t.Prices[s]; ok {
		return p, ok
	}
	p, ok := t.Prices[SKU{Name: s.Name, Region: AnyRegion}]
	return p, ok
}

// With returns the table with other's prices added, replacing any of the same SKU.
func (t Table) With(other Table) Table {
	merged := Table{Prices: maps.Clone(t.Prices)}
	if merged.Prices == nil {
		merged.Prices = map[SKU]Price{}
	}
	maps.Copy(merged.Prices, other.Prices)
	return merged
}

// Amount is a cost in USD, or unknown.
type Amount struct {
	USD   float64
	Known bool
}

// Total is a sum of amounts: what is known, and the items whose cost is not. The JSON plan
// carries it as it is.
type Total struct {
	KnownUSD float64  `json:"knownUSD"`
	Unknown  []string `json:"unknown"`
}

// Complete reports whether every item of the total has a price.
func (t Total) Complete() bool { return len(t.Unknown) == 0 }

// Add adds an item's amount: to the known sum, or to the unknown items.
func (t *Total) Add(item string, a Amount) {
	if a.Known {
		t.KnownUSD += a.USD
	} else if !slices.Contains(t.Unknown, item) {
		t.Unknown = append(t.Unknown, item)
	}
}

// Costed is a line with its price and what it costs.
type Costed struct {
	Line
	// Price is nil when the table has no price for the line's SKU.
	Price *Price
	// TrainingPerHour and IdlePerMonth are the line's cost in each state.
	TrainingPerHour, IdlePerMonth Amount
}

// Estimate is a bill priced from a table.
type Estimate struct {
	Lines []Costed
	// TrainingPerHour is the cost of an hour while the GPU nodes train; IdlePerMonth of a month
	// while they do not.
	TrainingPerHour, IdlePerMonth Total
	// Sources are the price lists the priced lines come from, in order of first use.
	Sources  []Source
	Excluded []string
}

// Price prices a bill. A zero quantity costs nothing whether or not its price is known.
func (b Bill) Price(t Table) Estimate {
	e := Estimate{Excluded: b.Excluded}
	for _, l := range b.Lines {
		c := Costed{Line: l}
		p, ok := t.Lookup(l.SKU)
		if !ok && l.StandIn != nil {
			if p, ok = t.Lookup(*l.StandIn); ok {
				c.Note = strings.TrimPrefix(c.Note+"; ", "; ") + fmt.Sprintf("priced at %s's list price: none of %s is recorded", l.StandIn.Region, l.SKU.Region)
			}
		}
		if ok {
			c.Price = &p
			if !slices.Contains(e.Sources, *p.Source) {
				e.Sources = append(e.Sources, *p.Source)
			}
		}
		c.TrainingPerHour = c.amount(l.Training, PerHour)
		c.IdlePerMonth = c.amount(l.Idle, PerGiBMonth)
		e.TrainingPerHour.Add(l.Item, c.TrainingPerHour)
		e.IdlePerMonth.Add(l.Item, c.IdlePerMonth)
		e.Lines = append(e.Lines, c)
	}
	return e
}

// amount is the cost of a quantity of the line over an hour (per == PerHour) or a month.
func (c Costed) amount(quantity float64, per Unit) Amount {
	if quantity == 0 && !c.UnknownQuantity {
		return Amount{Known: true}
	}
	if c.Price == nil || c.UnknownQuantity {
		return Amount{}
	}
	usd := quantity * c.Price.USD
	switch {
	case c.Unit == PerHour && per == PerGiBMonth:
		usd *= HoursPerMonth
	case c.Unit == PerGiBMonth && per == PerHour:
		usd /= HoursPerMonth
	}
	return Amount{USD: usd, Known: true}
}

// String prints an amount: "$1,234.56", or "unknown".
func (a Amount) String() string {
	if !a.Known {
		return "unknown"
	}
	return Dollars(a.USD)
}

// String prints a total: "$12.34", "at least $12.34 (unknown: GPU nodes)", or "unknown" when
// nothing of it is known.
func (t Total) String() string {
	switch {
	case t.Complete():
		return Dollars(t.KnownUSD)
	case t.KnownUSD == 0:
		return "unknown (" + strings.Join(t.Unknown, ", ") + ")"
	default:
		// The unknown items first: the known part alone would read as the cost, and the GPU
		// nodes, the bulk of any bill, are the ones a table most often lacks.
		return fmt.Sprintf("unknown: no price for %s (plan --prices FILE adds them); the rest: %s", strings.Join(t.Unknown, ", "), Dollars(t.KnownUSD))
	}
}

// Dollars prints USD with cents and thousands separators.
func Dollars(usd float64) string {
	cents := int64(usd*100 + 0.5)
	whole, frac := cents/100, cents%100
	digits := fmt.Sprint(whole)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return fmt.Sprintf("$%s.%02d", b.String(), frac)
}

// Unmatched are the SKUs of extra that no line of the bill prices, sorted, each with the bill's
// SKUs it could have meant: a price file entry that matches nothing (a misspelt name, another
// region) would otherwise be ignored without a word while the total still lacks that line.
func (b Bill) Unmatched(extra Table) []Mismatch {
	used := map[SKU]bool{}
	for _, l := range b.Lines {
		used[l.SKU] = true
	}
	var out []Mismatch
	for s := range extra.Prices {
		if used[s] {
			continue
		}
		m := Mismatch{SKU: s}
		for u := range used {
			if u.Name == s.Name || normalized(u.Name) == normalized(s.Name) || strings.HasPrefix(u.Name, family(s.Name)) {
				m.Candidates = append(m.Candidates, u)
			}
		}
		slices.SortFunc(m.Candidates, compareSKU)
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Mismatch) int { return compareSKU(a.SKU, b.SKU) })
	return out
}

// Plausible bounds of a list price: above them a price is more likely a typo or a price of
// another unit than a price. The dearest machine this program plans lists under $100 an hour
// (a3-ultragpu-8g on demand, the shipped table's sources); Managed Lustre, the dearest storage,
// under $1 a GiB-month.
const (
	MaxPlausibleHourUSD     = 200
	MaxPlausibleGiBMonthUSD = 5
)

// Implausible names the bill's lines that extra prices above the plausible bounds.
func (b Bill) Implausible(extra Table) []string {
	var out []string
	for _, l := range b.Lines {
		p, ok := extra.Prices[l.SKU]
		if !ok {
			continue
		}
		bound := float64(MaxPlausibleHourUSD)
		if l.Unit == PerGiBMonth {
			bound = MaxPlausibleGiBMonthUSD
		}
		if p.USD > bound {
			out = append(out, fmt.Sprintf("%s (%s) at $%g per %s is above any list price of its kind ($%g): a typo, or a price of another unit?", l.SKU, l.Item, p.USD, l.Unit, bound))
		}
	}
	return out
}

// Mismatch is a price file entry that matches no line of a bill, and the bill's SKUs it could
// have meant (same name elsewhere, the same name spelt otherwise, the same machine family).
type Mismatch struct {
	SKU        SKU
	Candidates []SKU
}

func (m Mismatch) String() string {
	msg := m.SKU.String() + " prices no line of this stack's bill, and is ignored"
	if len(m.Candidates) == 0 {
		return msg
	}
	names := make([]string, len(m.Candidates))
	for i, c := range m.Candidates {
		names[i] = fmt.Sprintf("%q in %s", c.Name, c.Region)
	}
	return msg + "; did you mean " + strings.Join(names, " or ") + "?"
}

// normalized is a SKU name without its separators: "a4-highgpu-8g-spot" and
// "a4-highgpu-8g/spot" are the same.
func normalized(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '/' || r == '_' || r == ' ' {
			return -1
		}
		return unicode.ToLower(r)
	}, name)
}

// family is a SKU name's first part: a machine series ("a4") or a product ("lustre").
func family(name string) string {
	f, _, _ := strings.Cut(name, "-")
	return f + "-"
}

func compareSKU(a, b SKU) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Region, b.Region))
}
