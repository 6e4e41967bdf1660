package infra_test

// eachMap calls f on every map in v, wherever it nests, with its path from the top.
func eachMap(path string, v any, f func(path string, m map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		f(path, t)
		for k, e := range t {
			eachMap(path+"."+k, e, f)
		}
	case []any:
		for _, e := range t {
			eachMap(path+"[]", e, f)
		}
	}
}

// podSpecs are the pod specs an object carries, wherever they nest (a Job's template, a
// RayCluster's head and worker groups, a RayJob's cluster and submitter), by path.
func podSpecs(obj map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	eachMap("", obj, func(path string, m map[string]any) {
		if _, ok := m["containers"]; ok {
			out[path] = m
		}
	})
	return out
}

// labelsOf are the labels of an object and of its pod templates, wherever they nest.
func labelsOf(obj map[string]any) map[string]string {
	out := map[string]string{}
	eachMap("", obj, func(_ string, m map[string]any) {
		if labels, ok := m["labels"].(map[string]any); ok {
			for k, v := range labels {
				if s, ok := v.(string); ok {
					out[k] = s
				}
			}
		}
	})
	return out
}
