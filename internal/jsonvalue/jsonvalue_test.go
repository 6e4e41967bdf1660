package jsonvalue_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"gke-rl/internal/jsonvalue"
)

func TestMapStringsReachesEveryStringAndCopies(t *testing.T) {
	in := map[string]any{
		"name": "a", "n": 1.5, "ok": true, "none": nil,
		"list": []any{"b", map[string]any{"c": "d"}, []any{"e"}},
	}
	out := jsonvalue.MapStrings(in, strings.ToUpper)
	assert.Equal(t, map[string]any{
		"name": "A", "n": 1.5, "ok": true, "none": nil,
		"list": []any{"B", map[string]any{"c": "D"}, []any{"E"}},
	}, out, "values change, keys do not")
	assert.Equal(t, "b", in["list"].([]any)[0], "the input is left as it was")
	assert.Equal(t, "d", in["list"].([]any)[1].(map[string]any)["c"])
}
