package kubetest_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"gke-rl/test/clitest"
	"gke-rl/test/crdschema"
	"gke-rl/test/plantest"
	"gke-rl/workloads/queue"
)

var updateKueueManifest = flag.Bool("update-kueue-manifest", false, "rewrite "+queue.ManifestFile+" from Kueue's sources")

// kustomizeRelease builds Kueue's release manifest from its sources at queue.KueueVersion (the
// Go module) as the release's Makefile does (`make artifacts`, Makefile of the tag:
// prepare-manifests runs `kustomize edit set image controller=$(IMAGE_TAG)` in
// config/components/manager, then `kustomize build config/default -o artifacts/manifests.yaml`),
// with the kustomize that kubectl carries. The image is queue.Image, the one the release names.
func kustomizeRelease(t *testing.T) []byte {
	t.Helper()
	clitest.Tool(t, "kubectl")
	src, err := crdschema.KueueDir(queue.KueueVersion)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "config"), os.DirFS(filepath.Join(src, "config"))))
	kustomization := filepath.Join(dir, "config/components/manager/kustomization.yaml")
	data, err := os.ReadFile(kustomization)
	require.NoError(t, err)
	var k map[string]any
	require.NoError(t, yaml.Unmarshal(data, &k))
	name, tag, ok := strings.Cut(queue.Image, ":")
	require.True(t, ok, queue.Image)
	set := 0
	for _, img := range k["images"].([]any) {
		if img := img.(map[string]any); img["name"] == "controller" {
			img["newName"], img["newTag"] = name, tag
			set++
		}
	}
	require.Equal(t, 1, set, "the manager's kustomization names the controller image once")
	data, err = yaml.Marshal(k)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kustomization, data, 0o644))
	out, err := exec.Command("kubectl", "kustomize", filepath.Join(dir, "config/default")).Output()
	require.NoError(t, err, "kubectl kustomize")
	return out
}

// objects are a multi-document YAML's objects, decoded: what kubectl applies, whatever the
// formatting.
func objects(t *testing.T, manifest []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range bytes.Split(manifest, []byte("\n---\n")) {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal(doc, &obj))
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out
}

func gunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	return out
}

// The Kueue manifest the program installs is Kueue's release built from its sources at the tag,
// object for object, with the release's image and no other; and the checksum the program gives
// the install step is the file's. `go test ./test/kubetest -run TestTheKueueManifest
// -update-kueue-manifest` writes it again (for a new KueueVersion).
func TestTheKueueManifestIsTheReleaseBuiltFromItsSources(t *testing.T) {
	built := kustomizeRelease(t)
	file := filepath.Join(plantest.RepoRoot(), queue.ManifestFile)
	if *updateKueueManifest {
		var buf bytes.Buffer
		w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		require.NoError(t, err)
		_, err = w.Write(built)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))
	}
	data, err := os.ReadFile(file)
	require.NoError(t, err, "the program's copy of Kueue's manifest")
	committed := objects(t, gunzip(t, data))
	assert.Equal(t, objects(t, built), committed, "%s is Kueue %s's release as its sources build it", queue.ManifestFile, queue.KueueVersion)

	sum := sha256.Sum256(data)
	assert.Equal(t, hex.EncodeToString(sum[:]), queue.ManifestSHA256(), "the checksum the install step checks is the file's (the program embeds the file it names)")

	kinds := map[string]int{}
	for _, obj := range committed {
		kinds[obj["kind"].(string)]++
	}
	t.Logf("%d objects: %v", len(committed), kinds)
	assert.Equal(t, 1, kinds["Deployment"], "one manager")
	assert.Equal(t, 1, kinds["MutatingWebhookConfiguration"])
	assert.Equal(t, 1, kinds["ValidatingWebhookConfiguration"])
	assert.Zero(t, kinds["DaemonSet"]+kinds["Pod"]+kinds["Job"]+kinds["StatefulSet"], "nothing else runs")
	images := strings.Count(string(gunzip(t, data)), "image: ")
	assert.Equal(t, 1, images, "one image")
	assert.Contains(t, string(gunzip(t, data)), "image: "+queue.Image+"\n", "the release's image")
}
