package offline

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag/colors"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"gke-rl/infra"
)

// StackConfig is a stack's configuration as the engine would pass it to the program.
type StackConfig struct {
	Project string
	// Values maps full keys (`gke-rl:gpu`) to their values; structured keys hold JSON.
	Values map[string]string
	// SecretKeys are the keys whose values are secrets.
	SecretKeys []string
	// Siblings are the other stacks of the directory, whose cluster names the stack's must not
	// take: the plan command reads them (infra.ReadSiblings); the test kits plan each stack
	// alone, so that a user's own stack files change no test's result.
	Siblings []infra.Sibling
}

// Keys are the full names of every key the stack sets, sorted.
func (sc *StackConfig) Keys() []string { return slices.Sorted(maps.Keys(sc.Values)) }

// StacksIn are the stacks whose files (Pulumi.<stack>.yaml) are in dir, sorted.
func StacksIn(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "Pulumi.*.yaml"))
	var stacks []string
	for _, f := range files {
		stacks = append(stacks, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "Pulumi."), ".yaml"))
	}
	sort.Strings(stacks)
	return stacks
}

// LoadStackConfig reads Pulumi.yaml and Pulumi.<stack>.yaml in dir with the Pulumi SDK's own
// workspace loaders, fills the project's config defaults and applies overrides (`PATH=VALUE`,
// Pulumi path syntax, the `gke-rl` namespace unless the path names one). Encrypted values are
// not decrypted: the plan sees "[secret]" in their place, still marked secret.
func LoadStackConfig(dir, stack string, overrides []string) (*StackConfig, error) {
	proj, err := workspace.LoadProject(filepath.Join(dir, "Pulumi.yaml"))
	if err != nil {
		return nil, fmt.Errorf("reading project: %w", err)
	}
	stackFile := filepath.Join(dir, "Pulumi."+stack+".yaml")
	if _, err := os.Stat(stackFile); err != nil {
		return nil, fmt.Errorf("stack %s: no file %s; the stacks here: %s", stack, stackFile, strings.Join(StacksIn(dir), ", "))
	}
	sink := diag.DefaultSink(nopWriter{}, nopWriter{}, diag.FormatOptions{Color: colors.Never})
	ps, err := workspace.LoadProjectStack(sink, proj, stackFile)
	if err != nil {
		return nil, fmt.Errorf("reading stack %s: %w", stack, err)
	}
	if ps.Config == nil {
		ps.Config = config.Map{}
	}
	if err := applyProjectDefaults(proj, ps.Config); err != nil {
		return nil, err
	}
	secretOverrides := map[string]string{}
	for _, o := range overrides {
		if err := applyOverride(string(proj.Name), ps.Config, secretOverrides, o); err != nil {
			return nil, err
		}
	}
	values, err := ps.Config.Decrypt(config.NewBlindingDecrypter())
	if err != nil {
		return nil, fmt.Errorf("reading stack %s: %w", stack, err)
	}
	sc := &StackConfig{Project: string(proj.Name), Values: map[string]string{}}
	for k, v := range values {
		sc.Values[k.String()] = v
	}
	// The blinding decrypter hid the secrets given on the command line; they are plain text
	// there, so the program gets them as they are, still marked secret.
	for k, v := range secretOverrides {
		sc.Values[k] = v
	}
	for k, v := range ps.Config {
		if v.Secure() {
			sc.SecretKeys = append(sc.SecretKeys, k.String())
		}
	}
	sort.Strings(sc.SecretKeys)
	return sc, nil
}

// applyProjectDefaults copies the defaults of Pulumi.yaml's `config:` block for keys the stack
// does not set, as `pulumi up` does.
func applyProjectDefaults(proj *workspace.Project, m config.Map) error {
	for name, decl := range proj.Config {
		if decl.Default == nil {
			continue
		}
		key, err := projectKey(string(proj.Name), name)
		if err != nil {
			return err
		}
		if _, set := m[key]; set {
			continue
		}
		m[key] = config.NewValue(fmt.Sprint(decl.Default))
	}
	return nil
}

func projectKey(project, name string) (config.Key, error) {
	if !strings.Contains(name, ":") {
		name = project + ":" + name
	}
	key, err := config.ParseKey(name)
	if err != nil {
		return config.Key{}, fmt.Errorf("config %q in Pulumi.yaml: %w", name, err)
	}
	return key, nil
}

// applyOverride sets one `--config PATH=VALUE`. The keys the program reads as secrets are set as
// secrets, as `pulumi config set --secret` would, and their values kept in secrets.
func applyOverride(project string, m config.Map, secrets map[string]string, override string) error {
	path, value, ok := strings.Cut(override, "=")
	if !ok || path == "" {
		return fmt.Errorf("--config %q: expected PATH=VALUE, e.g. gpu.nodes=16", override)
	}
	key, err := projectKey(project, path)
	if err != nil {
		return fmt.Errorf("--config %q: %w", override, err)
	}
	v := config.NewValue(value)
	if isSecretKey(project, path) {
		v = config.NewSecureValue("offline-plan")
		secrets[key.String()] = value
	}
	if err := m.Set(key, v, true); err != nil {
		return fmt.Errorf("--config %q: %w", override, err)
	}
	return nil
}

func isSecretKey(project, path string) bool {
	name := strings.TrimPrefix(path, project+":")
	// The retired token keys: a value given on the command line is a token, never echoed.
	_, retired := infra.RetiredTokenKeys[name]
	return retired
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
