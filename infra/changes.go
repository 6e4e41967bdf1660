package infra

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gke-rl/internal/kinds"
	"gke-rl/workloads"
)

// What a change of a key does to an experiment that has saved, for docs/operations.md's table
// "What each change does" (a test holds the guide to ChangeTable). The effects are the ones
// `plan --compare` prints: the same functions decide both.

// identityKeys are the keys whose change makes the default name, and a queued experiment's run,
// another experiment (experimentIdentity), for each framework.
var identityKeys = map[kinds.Framework][]string{
	kinds.Verl:   {"framework", "job.frameworkRelease", "job.model", "job.dataset", "job.revisions", "gpu.nodes", "gpu.type"},
	kinds.NeMoRL: {"framework", "job.frameworkRelease", "job.model", "job.dataset", "job.revisions", "job.recipe"},
}

const (
	effectNew     = "a new experiment, from step 0 in its own directory; the earlier one's checkpoints stay"
	effectApplies = "applies when the run resumes (read anew on every start)"
	effectBudget  = "trains on to the new budget from the newest checkpoint; a finished experiment trains again only if it grew"
	effectNotRead = "not read"
	// effectResumeFrom is job.resumeFrom's: a new experiment that starts from another's weights.
	effectResumeFrom = "a new experiment, from the other's newest checkpoint until it has its own; a changed optimizer setting starts a fresh optimizer"
)

// ChangeEffect is what changing Key does, with each framework.
type ChangeEffect struct {
	Key          string
	Verl, NeMoRL string
}

// ChangeEffects are the effects of every key that names or tunes an experiment: the identity's
// keys, then each key the frameworks' overrides come from, sorted.
func ChangeEffects() []ChangeEffect {
	effects := map[string]*ChangeEffect{}
	at := func(key string) *ChangeEffect {
		if effects[key] == nil {
			effects[key] = &ChangeEffect{Key: key, Verl: effectNotRead, NeMoRL: effectNotRead}
		}
		return effects[key]
	}
	put := func(e *ChangeEffect, f kinds.Framework, effect string) {
		if f == kinds.Verl {
			e.Verl = effect
		} else {
			e.NeMoRL = effect
		}
	}
	for _, f := range []kinds.Framework{kinds.Verl, kinds.NeMoRL} {
		for _, k := range identityKeys[f] {
			put(at(k), f, effectNew)
		}
		put(at("job.name"), f, effectNew)
		if why := workloads.ResumeRefusal(f); why != "" {
			put(at("job.resumeFrom"), f, "refused: "+why)
		} else {
			put(at("job.resumeFrom"), f, effectResumeFrom)
		}
		byOrigin := map[string][]string{}
		for key, o := range workloads.ManagedKeys(f) {
			origin := o.Origin
			if !strings.HasPrefix(origin, "job.") && !strings.HasPrefix(origin, "gpu.") {
				continue // fixed by the program, or a token's
			}
			byOrigin[origin] = append(byOrigin[origin], key)
		}
		for origin, keys := range byOrigin {
			slices.Sort(keys)
			effect := effectApplies
			for _, k := range keys {
				if e := workloads.SettingChangeEffect(k); e != "" {
					effect = e
				}
			}
			if origin == "job.maxSteps" || origin == "job.epochs" {
				effect = effectBudget
			}
			if !slices.Contains(identityKeys[f], origin) {
				put(at(origin), f, effect)
			}
		}
	}
	keys := slices.Sorted(maps.Keys(effects))
	out := make([]ChangeEffect, len(keys))
	for i, k := range keys {
		out[i] = *effects[k]
	}
	return out
}

// ChangeTable is ChangeEffects as the Markdown table of docs/operations.md.
func ChangeTable() string {
	var b strings.Builder
	b.WriteString("| key | verl | NeMo RL |\n|---|---|---|\n")
	for _, e := range ChangeEffects() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", e.Key, e.Verl, e.NeMoRL)
	}
	return b.String()
}
