// Package jsonvalue works on values as encoding/json decodes them into an any: strings, numbers,
// booleans, nil, []any and map[string]any.
package jsonvalue

// MapStrings is a copy of v with f applied to every string in it (map keys excepted): what a
// plan read from a file is cleaned with, or a plan rewritten as an earlier version wrote it.
func MapStrings(v any, f func(string) string) any {
	switch v := v.(type) {
	case string:
		return f(v)
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = MapStrings(v[i], f)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k := range v {
			out[k] = MapStrings(v[k], f)
		}
		return out
	}
	return v
}
