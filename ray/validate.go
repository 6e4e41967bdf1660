package ray

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
)

// ValidateCluster runs the KubeRay operator's own checks on a RayCluster, so that a spec the
// operator would reject fails the plan instead of the deployment.
func ValidateCluster(rc *rayv1.RayCluster) error {
	if err := utils.ValidateRayClusterMetadata(rc.ObjectMeta); err != nil {
		return fmt.Errorf("RayCluster %s: %w", rc.Name, err)
	}
	if err := utils.ValidateRayClusterSpec(&rc.Spec, rc.Annotations); err != nil {
		return fmt.Errorf("RayCluster %s: %w", rc.Name, err)
	}
	return nil
}

// ValidateJob runs the KubeRay operator's own checks on a RayJob (its embedded cluster spec
// included).
func ValidateJob(rj *rayv1.RayJob) error {
	if err := utils.ValidateRayJobMetadata(rj.ObjectMeta); err != nil {
		return fmt.Errorf("RayJob %s: %w", rj.Name, err)
	}
	if err := utils.ValidateRayJobSpec(rj); err != nil {
		return fmt.Errorf("RayJob %s: %w", rj.Name, err)
	}
	return nil
}

// CRDFields are the spec fields the program sets on its RayJob and RayCluster, as
// `<crd>/<version>:spec.<field>`, for the CRD wait to find in the cluster's own CRDs: GKE's Ray
// add-on installs them, and an older KubeRay's schema would let the API server drop a field it
// does not know (backoffLimit, submissionMode, ...) without an error.
func CRDFields(job *rayv1.RayJob, cluster *rayv1.RayCluster) ([]string, error) {
	var out []string
	add := func(crd string, spec any) error {
		raw, err := json.Marshal(spec)
		if err != nil {
			return err
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return err
		}
		for _, f := range slices.Sorted(maps.Keys(fields)) {
			out = append(out, crd+"/"+rayv1.GroupVersion.Version+":spec."+f)
		}
		return nil
	}
	if job != nil {
		if err := add("rayjobs.ray.io", job.Spec); err != nil {
			return nil, err
		}
	}
	if cluster != nil {
		if err := add("rayclusters.ray.io", cluster.Spec); err != nil {
			return nil, err
		}
	}
	return out, nil
}
