package cmd

import (
	"encoding/json"
	"fmt"
	"io"
)

// Exit statuses of the commands that check something live (`preflight`, `repo-check`): ExitOK
// when nothing failed, ExitUsage for bad arguments, and these.
const (
	// ExitCheckFailed: a check failed (for preflight, also: the stack's configuration is refused).
	ExitCheckFailed = 1
	// ExitCannotAsk: the API could not be asked at all (no credentials, no network); nothing
	// was checked.
	ExitCannotAsk = 3
)

// Status is a check's outcome.
type Status string

// The outcomes. A skipped check (preflight) could not be asked, because one it depends on failed
// or it does not apply to the stack; an unknown one (repo-check) was not shown to the token, and
// a person then checks it in the settings.
const (
	OK      Status = "ok"
	Failed  Status = "FAIL"
	Skipped Status = "skip"
	Unknown Status = "unknown"
)

// Finding is one check's answer; Fix, unless it passed, is the command or address that mends it.
type Finding struct {
	// Name is the check's (preflight) or the setting's (repo-check).
	Name   string
	Status Status
	Detail string
	Fix    string
}

// Report is how a command prints its findings: a table, each finding followed by its fix, or
// JSON.
type Report struct {
	// NameKey is the JSON field of a finding's Name: "check" or "setting".
	NameKey string
	// StatusWidth and NameWidth are the table's first two columns: the longest status and name
	// the command has, so that every run lines up the same.
	StatusWidth, NameWidth int
}

// WriteTable prints one row a finding, and its fix under it.
func (r Report) WriteTable(w io.Writer, findings []Finding) {
	for _, f := range findings {
		fmt.Fprintf(w, "  %-*s  %-*s  %s\n", r.StatusWidth, f.Status, r.NameWidth, f.Name, f.Detail)
		if f.Fix != "" {
			fmt.Fprintf(w, "  %-*s  %-*s  fix: %s\n", r.StatusWidth, "", r.NameWidth, "", f.Fix)
		}
	}
}

// WriteJSON prints the findings as a JSON list of {NameKey, "status", "detail", "fix"}, the fix
// left out when there is none.
func (r Report) WriteJSON(w io.Writer, findings []Finding) error {
	out := make([]jsonFinding, len(findings))
	for i, f := range findings {
		out[i] = jsonFinding{key: r.NameKey, Finding: f}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// jsonFinding is a finding with its name under the command's own key, fields in this order.
type jsonFinding struct {
	key string
	Finding
}

func (f jsonFinding) MarshalJSON() ([]byte, error) {
	name, err := json.Marshal(f.key)
	if err != nil {
		return nil, err
	}
	rest, err := json.Marshal(struct {
		Status Status `json:"status"`
		Detail string `json:"detail"`
		Fix    string `json:"fix,omitempty"`
	}{f.Status, f.Detail, f.Fix})
	if err != nil {
		return nil, err
	}
	value, err := json.Marshal(f.Name)
	if err != nil {
		return nil, err
	}
	// {"<key>": name, then rest's fields}
	out := append([]byte{'{'}, name...)
	out = append(out, ':')
	out = append(out, value...)
	out = append(out, ',')
	return append(out, rest[1:]...), nil
}

// Count is how many findings have the status.
func Count(findings []Finding, s Status) int {
	n := 0
	for _, f := range findings {
		if f.Status == s {
			n++
		}
	}
	return n
}
