package infra

import (
	"maps"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/internal/kinds"
)

// prepShares are what an experiment's data preparation writes that another's may write too:
// the model's and each dataset's download (the Hub cache keeps one directory, and one lock
// directory, a repository; the prepared copies are named by repository and revision) and, with
// verl, the checkout of its source, which every verl preparation makes in the same directory.
// Two preparations that share one run one after the other; the others run at once.
func prepShares(f kinds.Framework, h HubDownloads) []string {
	shares := []string{"model " + h.Model}
	for _, d := range h.Datasets {
		shares = append(shares, "dataset "+d)
	}
	if f == kinds.Verl {
		shares = append(shares, "verl source")
	}
	return shares
}

// earlierWriters are the preparations registered so far that write one of shares, each once,
// in a fixed order.
func earlierWriters(writer map[string]pulumi.Resource, shares []string) []pulumi.Resource {
	seen := map[pulumi.Resource]string{}
	for _, k := range shares {
		if w, ok := writer[k]; ok {
			if _, dup := seen[w]; !dup {
				seen[w] = k
			}
		}
	}
	// Ordered by the first share that names each: the dependencies do not move between plans.
	byKey := map[string]pulumi.Resource{}
	for w, k := range seen {
		byKey[k] = w
	}
	out := []pulumi.Resource{}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, byKey[k])
	}
	return out
}
