package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"gke-rl/infra/offline"
	"gke-rl/internal/cost"
	"gke-rl/internal/words"
)

// DestroyPlan is what `pulumi destroy` would do to a stack: the order in which resources go,
// what goes with the cluster without an API call, and what stays (and bills) with the command
// that removes it. It reads the same recording as the plan.
type DestroyPlan struct {
	Stack string
	// Protected are the resources with `protect`: a plain `pulumi destroy` refuses to start
	// while any is in the stack, and `pulumi destroy --exclude-protected` keeps them.
	Protected []*offline.Resource
	// Steps are the resources deleted, in waves: each waits until the waves before it are gone
	// (a resource goes before the resources it depends on).
	Steps [][]*offline.Resource
	// WithCluster are the in-cluster objects removed from the state with the cluster: Pulumi
	// makes no call to an API server that is going away (deletedWith).
	WithCluster []*offline.Resource
	// Stays are the resources left in the cloud.
	Stays []Kept
}

// Kept is a resource that `pulumi destroy` leaves in the cloud.
type Kept struct {
	Resource *offline.Resource
	// Why: protected, a dependency of a protected resource, retained on delete, abandoned.
	Why string
	// Remove is how to remove it when its data is no longer needed.
	Remove string
	// Bill is its line of the plan's priced bill: what it bills a month while it stays (its idle
	// month), or why that is unknown; nil when the bill has no line of it (it bills nothing of
	// note, or its cost goes with another line).
	Bill *cost.Costed
}

// Monthly is what a kept resource bills a month (unknown without a price), nil without a line.
func (k Kept) Monthly() *cost.Amount {
	if k.Bill == nil {
		return nil
	}
	return &k.Bill.IdlePerMonth
}

// Destroy computes the destroy plan of a planned stack, as `pulumi destroy --exclude-protected`
// runs it (which is what a plain `pulumi destroy` does when nothing is protected).
func Destroy(r *offline.Result) *DestroyPlan {
	d := &DestroyPlan{Stack: r.Stack}
	resources := map[string]*offline.Resource{}
	for _, res := range r.Resources {
		if res.Custom && !strings.HasPrefix(res.Type, "pulumi:providers:") {
			resources[res.URN] = res
		}
	}
	deps := func(res *offline.Resource) []string { return res.Dependencies }

	// --exclude-protected keeps a protected resource and everything it depends on: none of those
	// can go while it stays (pulumi/pulumi #8359, #20120).
	kept := map[string]string{}
	var keep func(urn, why string)
	keep = func(urn, why string) {
		res, ok := resources[urn]
		if !ok {
			return
		}
		if _, done := kept[urn]; done {
			return
		}
		kept[urn] = why
		for _, dep := range deps(res) {
			keep(dep, "a dependency of a protected resource")
		}
	}
	for _, res := range r.Resources {
		if res.Options.Protect {
			d.Protected = append(d.Protected, res)
			keep(res.URN, "protected (storage.protect)")
		}
	}

	remaining := map[string]*offline.Resource{}
	for urn, res := range resources {
		if _, ok := kept[urn]; ok {
			continue
		}
		if res.Options.DeletedWith != "" {
			if _, clusterStays := kept[res.Options.DeletedWith]; !clusterStays {
				d.WithCluster = append(d.WithCluster, res)
				continue
			}
		}
		remaining[urn] = res
	}
	sortByURN(d.WithCluster)

	for len(remaining) > 0 {
		// A resource can go once no remaining resource depends on it.
		needed := map[string]bool{}
		for _, res := range remaining {
			for _, dep := range deps(res) {
				needed[dep] = true
			}
		}
		var wave []*offline.Resource
		for urn, res := range remaining {
			if !needed[urn] {
				wave = append(wave, res)
			}
		}
		if len(wave) == 0 { // a cycle, which Pulumi would refuse; list the rest as one step
			for _, res := range remaining {
				wave = append(wave, res)
			}
		}
		sortByURN(wave)
		for _, res := range wave {
			delete(remaining, res.URN)
		}
		d.Steps = append(d.Steps, wave)
	}

	for _, res := range r.Resources {
		why, isKept := kept[res.URN]
		switch {
		case isKept:
			d.Stays = append(d.Stays, Kept{Resource: res, Why: why, Remove: removal(r, res, why), Bill: billLine(r, res)})
		case res.Options.RetainOnDelete:
			d.Stays = append(d.Stays, Kept{Resource: res, Why: "retained on delete (storage.protect)", Remove: removal(r, res, "retained"), Bill: billLine(r, res)})
		case deletionPolicy(res) == "ABANDON" && cleanedUpBy(r, res) == nil:
			d.Stays = append(d.Stays, Kept{Resource: res, Why: "abandoned (deletionPolicy ABANDON)", Remove: removal(r, res, "abandoned"), Bill: billLine(r, res)})
		}
	}
	return d
}

// billItems are the items of the plan's bill (infra.billOf) that a kept resource bills as.
var billItems = map[string]string{
	"gcp:lustre/instance:Instance": "Lustre instance",
	"gcp:storage/bucket:Bucket":    "Bucket",
}

// billLine is a kept resource's line of the plan's priced bill.
func billLine(r *offline.Result, res *offline.Resource) *cost.Costed {
	item, ok := billItems[res.Type]
	if !ok {
		return nil
	}
	for i := range r.Costs.Lines {
		if r.Costs.Lines[i].Item == item {
			return &r.Costs.Lines[i]
		}
	}
	return nil
}

// StaysMonthly is what everything that stays bills a month.
func (d *DestroyPlan) StaysMonthly() cost.Total {
	var t cost.Total
	for _, k := range d.Stays {
		if m := k.Monthly(); m != nil {
			t.Add(k.Resource.Name, *m)
		}
	}
	return t
}

// cleanedUpBy is the command whose delete step removes what an abandoned resource leaves behind:
// a command with a delete script that depends on it.
func cleanedUpBy(r *offline.Result, abandoned *offline.Resource) *offline.Resource {
	for _, res := range r.Resources {
		if res.Type != "command:local:Command" || !slices.Contains(res.Dependencies, abandoned.URN) {
			continue
		}
		if script, _ := res.Input("delete"); script != nil && script != "" {
			return res
		}
	}
	return nil
}

func deletionPolicy(res *offline.Resource) string {
	v, _ := res.Input("deletionPolicy")
	s, _ := v.(string)
	return s
}

// removal is how to remove a kept resource, by type; each command is in backticks, as the
// README shows commands, and the Lustre export is the stack's own checkpointExport output.
func removal(r *offline.Result, res *offline.Resource, why string) string {
	str := func(path string) string {
		v, _ := res.Input(path)
		s, _ := v.(string)
		return s
	}
	switch {
	case res.Type == "gcp:lustre/instance:Instance":
		export, _ := r.Outputs["checkpointExport"].(string)
		return fmt.Sprintf("copy out the checkpoints you want (`pulumi stack output checkpointExport`: `%s`; "+
			"the Managed Lustre service agent needs roles/storage.objectUser on the bucket), then `pulumi state unprotect '%s'` and `pulumi destroy`",
			export, res.URN)
	case res.Type == "gcp:storage/bucket:Bucket":
		return fmt.Sprintf("copy out what you want, then `gcloud storage rm --recursive gs://%s`", str("name"))
	case res.Type == "gcp:servicenetworking/connection:Connection":
		return "removed by storage-psa-cleanup once the instance is gone; by hand: " +
			"`gcloud services vpc-peerings delete --service=servicenetworking.googleapis.com --network=<main VPC> --project=<project>`"
	case why == "a dependency of a protected resource":
		return "goes with the next `pulumi destroy`, once the protected resource is unprotected"
	}
	return ""
}

func sortByURN(rs []*offline.Resource) {
	slices.SortFunc(rs, func(a, b *offline.Resource) int { return strings.Compare(a.URN, b.URN) })
}

// WriteDestroy prints a destroy plan.
func WriteDestroy(out io.Writer, d *DestroyPlan) error {
	w := &errWriter{w: out}
	fmt.Fprintf(w, "Destroy plan for stack %s (offline)\n", d.Stack)
	if len(d.Protected) > 0 {
		fmt.Fprintf(w, "\n`pulumi destroy` stops before deleting anything while %s in the stack:\n", words.CountIs(len(d.Protected), "protected resource"))
		for _, res := range d.Protected {
			fmt.Fprintf(w, "  %s %s\n", res.Type, res.Name)
		}
		fmt.Fprintln(w, "\n`pulumi destroy --exclude-protected` frees the GPUs and keeps the data:")
	} else {
		fmt.Fprintln(w, "\n`pulumi destroy` (nothing is protected):")
	}
	for i, wave := range d.Steps {
		fmt.Fprintf(w, "  step %d:\n", i+1)
		for _, res := range wave {
			fmt.Fprintf(w, "    delete %s %s%s\n", res.Type, res.Name, destroyNote(res))
		}
	}
	if len(d.WithCluster) > 0 {
		fmt.Fprintf(w, "  with the cluster, no API call (deletedWith): %d Kubernetes objects\n", len(d.WithCluster))
	}
	if len(d.Stays) == 0 {
		fmt.Fprintln(w, "\nNothing stays.")
		return w.err
	}
	fmt.Fprintf(w, "\nStays in the cloud, billing %s a month at list prices:\n", d.StaysMonthly())
	for _, k := range d.Stays {
		fmt.Fprintf(w, "  %s %s: %s\n", k.Resource.Type, k.Resource.Name, k.Why)
		if l := k.Bill; l != nil {
			fmt.Fprintf(w, "    bills: %s a month for %s", l.IdlePerMonth, l.Detail)
			if l.Price == nil {
				fmt.Fprintf(w, " (no price for %s: `plan --prices FILE --destroy` prices it; %s)", l.SKU, CurrentPricesURL)
			}
			fmt.Fprintln(w)
		}
		if k.Remove != "" {
			fmt.Fprintf(w, "    to remove: %s\n", k.Remove)
		}
	}
	return w.err
}

func destroyNote(res *offline.Resource) string {
	switch {
	case deletionPolicy(res) == "ABANDON":
		return "  (abandoned: only removed from the state; the command that depends on it removed it)"
	case res.Type == "command:local:Command":
		if script, _ := res.Input("delete"); script != nil && script != "" {
			return "  (runs its delete script)"
		}
	case res.Type == "gcp:storage/bucket:Bucket":
		if force, _ := res.Input("forceDestroy"); force == true {
			return "  (with its objects: forceDestroy)"
		}
		return "  (fails while it holds objects: forceDestroy is off)"
	case res.Options.CustomTimeouts != nil && res.Options.CustomTimeouts.Delete != "":
		return "  (up to " + res.Options.CustomTimeouts.Delete + ")"
	}
	return ""
}

// destroyJSON is `plan --destroy --json`.
type destroyJSON struct {
	Stack       string     `json:"stack"`
	Protected   []string   `json:"protected"`
	Steps       [][]string `json:"steps"`
	WithCluster []string   `json:"withCluster"`
	Stays       []keptJSON `json:"stays"`
}

type keptJSON struct {
	URN    string `json:"urn"`
	Why    string `json:"why"`
	Remove string `json:"remove,omitempty"`
	// MonthlyUSD is what it bills a month; null when unknown or not billed as an item of its own.
	MonthlyUSD *float64 `json:"monthlyUSD"`
}

// WriteDestroyJSON prints a destroy plan as JSON, resources by URN.
func WriteDestroyJSON(w io.Writer, d *DestroyPlan) error {
	urns := func(rs []*offline.Resource) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.URN)
		}
		return out
	}
	doc := destroyJSON{Stack: d.Stack, Protected: urns(d.Protected), Steps: [][]string{}, WithCluster: urns(d.WithCluster), Stays: []keptJSON{}}
	for _, wave := range d.Steps {
		doc.Steps = append(doc.Steps, urns(wave))
	}
	for _, k := range d.Stays {
		kept := keptJSON{URN: k.Resource.URN, Why: k.Why, Remove: k.Remove}
		if m := k.Monthly(); m != nil && m.Known {
			kept.MonthlyUSD = &m.USD
		}
		doc.Stays = append(doc.Stays, kept)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
