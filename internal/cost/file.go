package cost

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"
)

// File is a price file: prices a user read elsewhere (the Cloud Billing console, a negotiated
// price list), for the SKUs the shipped table lacks or to replace its prices.
//
//	{"date": "2026-11-30", "source": "Cloud Billing console, SKU list",
//	 "prices": [{"sku": "a4-highgpu-8g/spot", "region": "us-east1", "usd": 30.5}]}
type File struct {
	Source
	Prices []FilePrice `json:"prices"`
}

// FilePrice is one price of a price file: USD per Unit of the SKU (per hour for a machine type,
// per GiB-month for storage).
type FilePrice struct {
	SKU
	USD float64 `json:"usd"`
	// Basis says how the price was made, for a reader to check it (`preflight --prices-out`
	// names the catalog SKUs and rates it multiplied); optional.
	Basis string `json:"basis,omitempty"`
}

// LoadFile reads a price file; every problem names the file and the entry.
func LoadFile(path string) (Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Table{}, err
	}
	return ParseFile(path, data)
}

// ParseFile parses a price file's content; name is how errors refer to it.
func ParseFile(name string, data []byte) (Table, error) {
	var f File
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Table{}, fmt.Errorf("%s: %w", name, err)
	}
	t, err := f.Table()
	if err != nil {
		return Table{}, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// Table is the file's prices as a table, each with the file's source; it refuses what ParseFile
// refuses, so that a file written by the program reads back.
func (f File) Table() (Table, error) {
	if _, err := time.Parse(time.DateOnly, f.Date); err != nil {
		return Table{}, fmt.Errorf("date %q: want the day the prices were read, as YYYY-MM-DD", f.Date)
	}
	if f.Name == "" {
		return Table{}, fmt.Errorf("source is empty: say where the prices were read")
	}
	if err := printable("source", f.Name); err != nil {
		return Table{}, err
	}
	src := f.Source
	t := Table{Prices: map[SKU]Price{}}
	for i, p := range f.Prices {
		for _, f := range [][2]string{{"sku", p.Name}, {"region", p.Region}, {"basis", p.Basis}} {
			if err := printable(fmt.Sprintf("prices[%d].%s", i, f[0]), f[1]); err != nil {
				return Table{}, err
			}
		}
		if p.Name == "" || p.Region == "" || p.USD <= 0 {
			return Table{}, fmt.Errorf("prices[%d]: want a sku, a region and a usd above 0, got sku %q, region %q, usd %g", i, p.Name, p.Region, p.USD)
		}
		if _, dup := t.Prices[p.SKU]; dup {
			return Table{}, fmt.Errorf("prices[%d]: %s is priced twice", i, p.SKU)
		}
		t.Prices[p.SKU] = Price{USD: p.USD, Source: &src}
	}
	return t, nil
}

// printable refuses a string with control characters: the plan prints a price file's strings to
// the terminal, where an escape sequence would rewrite what the user reads.
func printable(field, s string) error {
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return fmt.Errorf("%s: %q holds a control character at byte %d; allowed: printable text", field, s, i)
	}
	return nil
}
