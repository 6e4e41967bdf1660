package ray

import (
	"fmt"

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
