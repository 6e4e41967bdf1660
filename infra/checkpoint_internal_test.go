package infra

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A parameter count is said in billions from 1B on, in millions below it.
func TestParameterCountsAreSaidInBillionsFromOneBillion(t *testing.T) {
	for p, want := range map[float64]string{
		999e6:  "999M",
		1e9:    "1B",
		1.5e9:  "1.5B",
		500e6:  "500M",
		72e9:   "72B",
		1.24e9: "1.24B",
	} {
		assert.Equal(t, want, formatParams(p), "%g", p)
	}
}
