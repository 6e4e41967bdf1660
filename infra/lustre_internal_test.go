package infra

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The rule a refused size is told, literal: the 125 tier has one step up to its maximum (its
// threshold is its maximum), the others a second, larger one above their threshold.
func TestTheLustreRuleReadsAsGooglesTable(t *testing.T) {
	for tier, want := range map[int]string{
		125: "72000 to 12240000 GiB in steps of 72000",
		500: "18000 to 20016000 GiB in steps of 18000 (above 3060000, multiples of 144000)",
	} {
		lt, _ := LookupLustreTier(tier)
		assert.Equal(t, want, lt.rule(), "tier %d", tier)
	}
}
