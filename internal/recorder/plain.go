package recorder

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// SecretPlaceholder stands for a secret value wherever a recording prints one.
const SecretPlaceholder = "[secret]"

// PlainValue converts a property value to plain JSON-able data, hiding secrets.
func PlainValue(v resource.PropertyValue) any {
	switch {
	case v.IsSecret():
		return SecretPlaceholder
	case v.IsComputed():
		return "[unknown]"
	case v.IsOutput():
		o := v.OutputValue()
		if o.Secret {
			return SecretPlaceholder
		}
		if !o.Known {
			return "[unknown]"
		}
		return PlainValue(o.Element)
	case v.IsNull():
		return nil
	case v.IsBool():
		return v.BoolValue()
	case v.IsNumber():
		f := v.NumberValue()
		if f == float64(int64(f)) {
			return int64(f)
		}
		return f
	case v.IsString():
		return v.StringValue()
	case v.IsArray():
		arr := v.ArrayValue()
		out := make([]any, len(arr))
		for i, e := range arr {
			out[i] = PlainValue(e)
		}
		return out
	case v.IsObject():
		return PlainMap(v.ObjectValue())
	case v.IsResourceReference():
		return string(v.ResourceReferenceValue().URN)
	case v.IsAsset(), v.IsArchive():
		return "[asset]"
	}
	return fmt.Sprint(v.V)
}

// PlainMap converts a property map to plain JSON-able data, hiding secrets.
func PlainMap(m resource.PropertyMap) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[string(k)] = PlainValue(v)
	}
	return out
}

// Lookup walks plain data (a rendered manifest, resource inputs) by a dotted path; a number
// indexes a list (`spec.containers.0.image`).
func Lookup(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		switch cur := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = cur[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(cur) {
				return nil, false
			}
			v = cur[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// Input returns an input of the resource by dotted path, secrets hidden, and whether it is set.
func (r *Resource) Input(path string) (any, bool) {
	return Lookup(PlainMap(r.Inputs), path)
}
