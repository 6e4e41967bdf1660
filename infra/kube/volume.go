package kube

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// sharedVolumeName is the pod-level name of the shared claim in every pod that mounts it.
const sharedVolumeName = "shared"

// SharedVolume is the claim that holds data, models and checkpoints, and what a pod needs to
// use it. The storage package fills it; the Ray pods and the data preparation mount it.
type SharedVolume struct {
	// ClaimName is the claim in the workload namespace; MountPath is where pods mount it.
	ClaimName string
	MountPath string
	// ServiceAccountName is the Kubernetes service account pods must run as to reach the
	// storage ("" when any account will do).
	ServiceAccountName string
	// PodAnnotations are the annotations pods need (GCS FUSE's sidecar injection).
	PodAnnotations map[string]string
}

// Volume is the pod volume of the claim.
func (v SharedVolume) Volume() corev1.Volume {
	return corev1.Volume{Name: sharedVolumeName, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.ClaimName},
	}}
}

// Mount mounts the claim at MountPath.
func (v SharedVolume) Mount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: sharedVolumeName, MountPath: v.MountPath}
}

// Annotations is a copy of PodAnnotations, nil when there are none, so that callers may add
// their own and an empty map never renders.
func (v SharedVolume) Annotations() map[string]string {
	if len(v.PodAnnotations) == 0 {
		return nil
	}
	return maps.Clone(v.PodAnnotations)
}
