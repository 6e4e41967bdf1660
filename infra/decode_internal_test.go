package infra

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scalars is a struct of each scalar type a config object's fields take.
type scalars struct {
	Text  *string  `json:"text"`
	Count *int     `json:"count"`
	Rate  *float64 `json:"rate"`
	On    *bool    `json:"on"`
}

// decodeField decodes raw into the field of scalars tagged key and returns the field's value
// (nil while unset) or the error.
func decodeField(t *testing.T, key, raw string) (any, error) {
	t.Helper()
	var s scalars
	v := reflect.ValueOf(&s).Elem()
	known := map[string][]int{}
	collectFields(v.Type(), nil, known)
	field := v.FieldByIndex(known[key])
	if err := decodeValue(json.RawMessage(raw), field); err != nil {
		return nil, err
	}
	if field.IsNil() {
		return nil, nil
	}
	return field.Elem().Interface(), nil
}

// What `pulumi config set --path` stores is JSON: a number or boolean typed as such, or a string
// when the value is not the plain form Pulumi converts (`" 8"`, `True`, `1e-6` given with
// spaces); each scalar is taken from either form, and refused with what it is not.
func TestAScalarIsTakenFromItsJSONValueOrFromAString(t *testing.T) {
	for _, tc := range []struct {
		key, raw string
		want     any
	}{
		{"count", `8`, 8},
		{"count", `"8"`, 8},
		{"count", `" 8 "`, 8},
		{"count", `-1`, -1},
		{"rate", `1e-6`, 1e-6},
		{"rate", `"1e-6"`, 1e-6},
		{"rate", `" 0.5 "`, 0.5},
		{"on", `true`, true},
		{"on", `"true"`, true},
		{"on", `"True"`, true},
		{"on", `" false "`, false},
		{"text", `"a"`, "a"},
		// A name of digits alone (a revision, a project number) that Pulumi stored as a number.
		{"text", `123`, "123"},
	} {
		got, err := decodeField(t, tc.key, tc.raw)
		require.NoError(t, err, "%s=%s", tc.key, tc.raw)
		assert.Equal(t, tc.want, got, "%s=%s", tc.key, tc.raw)
	}
}

func TestAScalarThatIsNotItsTypeIsRefused(t *testing.T) {
	for _, tc := range []struct{ key, raw, want string }{
		{"count", `"eight"`, "is not an integer"},
		{"count", `2.5`, "is not an integer"},
		{"count", `true`, "is not an integer"},
		{"count", `[8]`, "is not an integer"},
		{"rate", `"fast"`, "is not a number"},
		{"rate", `"NaN"`, "is not a number"},
		{"rate", `"Inf"`, "is not a number"},
		{"rate", `"-Inf"`, "is not a number"},
		{"rate", `{}`, "is not a number"},
		{"on", `"maybe"`, "is not a boolean (true or false)"},
		{"on", `1`, "is not a boolean (true or false)"},
		{"text", `true`, "is not a string"},
		{"text", `["a"]`, "is not a string"},
	} {
		got, err := decodeField(t, tc.key, tc.raw)
		require.Error(t, err, "%s=%s decoded as %v", tc.key, tc.raw, got)
		assert.Equal(t, tc.want, err.Error(), "%s=%s", tc.key, tc.raw)
	}
}

// null leaves a field unset, whatever its type: the program's default then applies.
func TestANullLeavesTheFieldUnset(t *testing.T) {
	for _, key := range []string{"text", "count", "rate", "on"} {
		got, err := decodeField(t, key, `null`)
		require.NoError(t, err)
		assert.Nil(t, got, key)
	}
}

// A list is a JSON list of strings, or one string holding one (`pulumi config set
// cluster.authorizedNetworks '["10.0.0.0/8"]'` stores the text).
func TestAListIsTakenFromAListOrAStringHoldingOne(t *testing.T) {
	for raw, want := range map[string][]string{
		`["10.0.0.0/8", "192.168.0.0/16"]`:       {"10.0.0.0/8", "192.168.0.0/16"},
		`"[\"10.0.0.0/8\", \"192.168.0.0/16\"]"`: {"10.0.0.0/8", "192.168.0.0/16"},
		`[]`:                                     {},
	} {
		got, err := decodeStrings(json.RawMessage(raw))
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
	for _, raw := range []string{`"10.0.0.0/8"`, `[1, 2]`, `"[1]"`, `{"a": "b"}`} {
		_, err := decodeStrings(json.RawMessage(raw))
		assert.EqualError(t, err, "is not a list of strings", raw)
	}
}
