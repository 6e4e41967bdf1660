package cmd_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	_ "gke-rl/test/golden" // every test binary accepts -update
)

var findings = []cmd.Finding{
	{Name: "project", Status: cmd.OK, Detail: "acme-rl"},
	{Name: "machine type", Status: cmd.Failed, Detail: "not in us-east1-b", Fix: "`gcloud compute machine-types list`"},
	{Name: "reservation", Status: cmd.Skipped, Detail: "gpu.provisioning is spot"},
}

// The table lines up in the command's own columns whatever the findings, each fix under its
// finding.
func TestTheTableLinesUpInTheCommandsColumns(t *testing.T) {
	var out bytes.Buffer
	cmd.Report{NameKey: "check", StatusWidth: 4, NameWidth: 12}.WriteTable(&out, findings)
	assert.Equal(t, ""+
		"  ok    project       acme-rl\n"+
		"  FAIL  machine type  not in us-east1-b\n"+
		"                      fix: `gcloud compute machine-types list`\n"+
		"  skip  reservation   gpu.provisioning is spot\n", out.String())
}

// The JSON names each finding under the command's key, first, and leaves out a fix that is not
// there.
func TestTheJSONNamesFindingsUnderTheCommandsKey(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, cmd.Report{NameKey: "setting"}.WriteJSON(&out, findings[1:2]))
	assert.Equal(t, `[
  {
    "setting": "machine type",
    "status": "FAIL",
    "detail": "not in us-east1-b",
    "fix": "`+"`gcloud compute machine-types list`"+`"
  }
]
`, out.String())
	out.Reset()
	require.NoError(t, cmd.Report{NameKey: "check"}.WriteJSON(&out, findings[:1]))
	assert.NotContains(t, out.String(), "fix")
	assert.Equal(t, 1, cmd.Count(findings, cmd.Failed))
}
