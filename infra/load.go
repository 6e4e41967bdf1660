package infra

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"gke-rl/internal/kinds"
)

// LoadConfig reads the stack configuration from ctx, decodes it strictly and applies defaults.
// It returns Errors listing every problem of form (unknown keys, values of the wrong type, tokens
// in plain text) at once; Resolve checks the values.
//
// presentKeys are the full names (`gke-rl:gpu`) of every key the stack sets, used to reject
// unknown top-level keys; nil skips that check.
func LoadConfig(ctx *pulumi.Context, presentKeys []string) (*Config, error) {
	var errs Errors
	checkTopLevelKeys(presentKeys, &errs)

	cfg := &Config{}
	gcpCfg := config.New(ctx, "gcp")
	cfg.Project = gcpCfg.Get("project")
	cfg.Region = gcpCfg.Get("region")

	own := config.New(ctx, ProjectName)
	cfg.Zone = own.Get(KeyZone)
	cfg.Framework = kinds.Framework(own.Get(KeyFramework))

	raw := rawConfig{}
	decodeIfSet(own, KeyCluster, &raw.Cluster, &errs)
	decodeIfSet(own, KeyNetwork, &raw.Network, &errs)
	decodeIfSet(own, KeyGPU, &raw.GPU, &errs)
	decodeIfSet(own, KeyStorage, &raw.Storage, &errs)
	decodeIfSet(own, KeyRay, &raw.Ray, &errs)
	decodeIfSet(own, KeyJob, &raw.Job, &errs)
	if v, err := own.Try(KeyJobs); err == nil {
		raw.Jobs = decodeJobs(v, raw.Job, &errs)
	}
	decodeIfSet(own, KeyGate, &raw.Gate, &errs)
	decodeIfSet(own, KeyMonitoring, &raw.Monitoring, &errs)

	decodeIfSet(own, KeyTokens, &raw.Tokens, &errs)

	applyDefaults(cfg, &raw)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func decodeIfSet(own *config.Config, key string, target any, errs *Errors) {
	if v, err := own.Try(key); err == nil {
		decodeObject(key, v, target, errs)
	}
}

// knownTopLevelKeys are the keys of the gke-rl namespace.
var knownTopLevelKeys = []string{
	KeyZone, KeyCluster, KeyNetwork, KeyGPU, KeyStorage, KeyFramework, KeyRay, KeyJob, KeyJobs, KeyGate, KeyMonitoring, KeyTokens,
}

func checkTopLevelKeys(present []string, errs *Errors) {
	known := map[string]bool{}
	for _, k := range knownTopLevelKeys {
		known[k] = true
	}
	sorted := append([]string(nil), present...)
	sort.Strings(sorted)
	for _, full := range sorted {
		name, ok := strings.CutPrefix(full, ProjectName+":")
		if token, retired := RetiredTokenKeys[name]; ok && retired {
			// Never echo the value: it is a token.
			errs.Add(name, "tokens no longer pass through Pulumi, whose state, previews and passphrase would all reach them: "+
				"remove it (`pulumi config rm %s`), set `pulumi config set --path tokens.%s true`, and once `pulumi up` has created the secret, "+
				"store the token in Secret Manager with the command the `tokenCommands` output prints (README, Tokens); "+
				"and revoke this token and issue a new one (the old one stays readable, encrypted, in the stack file's git history and in every state version "+
				"that held it, to anyone with the passphrase), and rotate the passphrase (`pulumi stack change-secrets-provider passphrase`)", name, token)
			continue
		}
		if ok && !known[name] {
			errs.Add(name, "unknown key;%s the %s namespace takes %s", topLevelHint(name), ProjectName, strings.Join(knownTopLevelKeys, ", "))
		}
	}
}

// topLevelHint is what an unknown top-level key most likely meant: `pulumi config set gpu.nodes
// 2` without --path stores a key named "gpu.nodes", not gpu's key nodes; otherwise the nearest
// known key.
func topLevelHint(name string) string {
	if top, rest, dotted := strings.Cut(name, "."); dotted && slices.Contains(knownTopLevelKeys, top) {
		return fmt.Sprintf(" %s is %s's key %s only when set with --path: `pulumi config rm %s`, then `pulumi config set --path %s <value>`.", quote(name), top, rest, name, name)
	}
	return didYouMean("", name, knownTopLevelKeys)
}

// EnvConfigKeys returns the config keys that the Pulumi engine passes to the program, read from
// the same environment variable the SDK reads; nil when not run by the engine.
func EnvConfigKeys() []string {
	raw := os.Getenv(pulumi.EnvConfig)
	if raw == "" {
		return nil
	}
	var m map[string]string
	if json.Unmarshal([]byte(raw), &m) != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

// ConfigKeys are every key the stack configuration takes, as `pulumi config set --path` names
// them (`gpu.nodes`), read from the config types: the configuration reference is checked
// against them.
func ConfigKeys() []string {
	keys := []string{KeyGCPProject, KeyGCPRegion, KeyZone, KeyFramework}
	sections := reflect.TypeOf(rawConfig{})
	for i := 0; i < sections.NumField(); i++ {
		section := sections.Field(i)
		if section.Name == "Jobs" {
			// An entry of jobs, NAME standing for its key, takes every key of job and its own.
			keys = append(keys, "jobs.NAME", "jobs.NAME.priority", "jobs.NAME.nodes")
			continue
		}
		fields := map[string][]int{}
		collectFields(section.Type, nil, fields)
		for _, tag := range slices.SortedFunc(maps.Keys(fields), func(a, b string) int { return slices.Compare(fields[a], fields[b]) }) {
			keys = append(keys, strings.ToLower(section.Name)+"."+tag)
		}
	}
	return keys
}
