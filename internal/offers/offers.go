// Package offers says where Compute Engine offers the GPU machine types the program supports, as
// recorded on a date, so that a stack naming a region or zone without its machine type fails at
// `plan` and before `pulumi up` registers anything, not 20 to 40 minutes in, at the GPU pool.
//
// Two recordings, both kept verbatim in this directory (SOURCES.md has their addresses):
//   - machine-type-regions.csv: `gcloud compute machine-types list` over every zone, reduced to
//     regions (Cyclenerd/google-cloud-pricing-cost-calculator tools/machinetypes.sh; the rows for
//     our machine types at commit 8bf3293, 2026-08-17). Its header says ZONE; the script strips
//     the zone letter, so the column holds regions.
//   - machine-type-zones.csv: SkyPilot's GCP catalog, built from the Compute Engine API's
//     machine type list per zone (skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv at
//     8427bbff). It is older than the region list: it lacks a4-highgpu-8g in europe-west1, which
//     the region list shows from 2026-07-26, and has every region added before that (the last on
//     2025-11-05).
//
// A table on a date ages: a zone Google adds later is refused by the zone rule until the table is
// refreshed, which is why a region the region list names and the zone list does not is only a
// warning, and why every message says the date and the gcloud command that shows today's answer.
package offers

import (
	_ "embed"
	"encoding/csv"
	"fmt"
	"slices"
	"strings"
)

// Dates of the two recordings.
const (
	RegionsRecorded = "2026-08-17"
	ZonesRecorded   = "before 2026-07-26"
)

//go:embed machine-type-regions.csv
var regionsCSV string

//go:embed machine-type-zones.csv
var zonesCSV string

// Offer is where one machine type was offered.
type Offer struct {
	// Regions offering the machine type (region list).
	Regions []string
	// Zones offering it (zone list), each in one of Regions or in a region the region list
	// dropped since.
	Zones []string
}

var table = load()

// Lookup returns where machineType was offered; ok is false for a machine type neither list has.
func Lookup(machineType string) (Offer, bool) {
	o, ok := table[machineType]
	return o, ok
}

// Verdict is what the tables say of one zone for one machine type.
type Verdict struct {
	// Refusal, when not empty, is why the zone cannot run the machine type (without the key).
	Refusal string
	// Warning, when not empty, is why the tables cannot tell.
	Warning string
}

// Check judges zone (in region) for machineType.
func Check(machineType, region, zone string) Verdict {
	o, ok := Lookup(machineType)
	if !ok {
		return Verdict{Warning: fmt.Sprintf("the program has no record of where %s is offered; %s", machineType, todayCommand(machineType, zone))}
	}
	if !slices.Contains(o.Regions, region) {
		return Verdict{Refusal: fmt.Sprintf("%q: %s is not offered in %s (gcloud's machine type list, %s); zones that offer it: %s; %s",
			zone, machineType, region, RegionsRecorded, strings.Join(o.Zones, ", "), todayCommand(machineType, zone))}
	}
	inRegion := zonesIn(o.Zones, region)
	switch {
	case len(inRegion) == 0:
		return Verdict{Warning: fmt.Sprintf("%s is offered in %s (gcloud's machine type list of %s), but the zone list (%s) names no zone of it, so %q is unchecked; %s",
			machineType, region, RegionsRecorded, ZonesRecorded, zone, todayCommand(machineType, zone))}
	case !slices.Contains(inRegion, zone):
		return Verdict{Refusal: fmt.Sprintf("%q does not offer %s; in %s it is offered in %s (Compute Engine's machine type list, %s); %s",
			zone, machineType, region, strings.Join(inRegion, ", "), ZonesRecorded, todayCommand(machineType, zone))}
	}
	return Verdict{}
}

// todayCommand is the command that answers for today, in the user's own project.
func todayCommand(machineType, zone string) string {
	return fmt.Sprintf("`gcloud compute machine-types describe %s --zone %s` says whether it is offered there today", machineType, zone)
}

func zonesIn(zones []string, region string) []string {
	var in []string
	for _, z := range zones {
		if strings.HasPrefix(z, region+"-") { // the hyphen keeps us-east1 from matching us-east10-a
			in = append(in, z)
		}
	}
	return in
}

// load reads the two recordings; a malformed one is a build mistake, caught by the package's
// tests, so it panics.
func load() map[string]Offer {
	t := map[string]Offer{}
	for _, row := range records(regionsCSV, ';', 6)[1:] {
		o := t[row[0]]
		o.Regions = appendNew(o.Regions, row[5])
		t[row[0]] = o
	}
	for _, row := range records(zonesCSV, ',', 10)[1:] {
		o := t[row[0]]
		o.Zones = appendNew(o.Zones, row[7])
		t[row[0]] = o
	}
	for name, o := range t {
		slices.Sort(o.Regions)
		slices.Sort(o.Zones)
		t[name] = o
	}
	return t
}

func records(text string, sep rune, fields int) [][]string {
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = sep
	r.FieldsPerRecord = fields
	rows, err := r.ReadAll()
	if err != nil {
		panic(fmt.Sprintf("offers: a recorded table does not parse: %v", err))
	}
	return rows
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
