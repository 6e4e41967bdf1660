package kube

import (
	"maps"
	"path"

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
	// storage ("" when any account will do): the training pods', whose principal alone may
	// write the checkpoints.
	ServiceAccountName string
	// SupportServiceAccountName is the account the pods that do not train run as (the data
	// preparation, the gates, the submitter): its principal reaches everything but the
	// checkpoints ("" when any account will do).
	SupportServiceAccountName string
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

// ReadOnlyMount mounts the whole claim at MountPath, read-only: a pod that reads what others
// wrote (the submitter's check of verl) and writes nothing.
func (v SharedVolume) ReadOnlyMount() corev1.VolumeMount {
	m := v.Mount()
	m.ReadOnly = true
	return m
}

// MountDirs mounts only the named directories of the claim (relative to its root), each at its
// place under MountPath, read-write: a pod that writes there sees nothing else of the volume,
// the checkpoints above all (kubelet creates a missing subPath directory, and resolves it
// inside the volume only). GCS FUSE's volumes take subPath once the FUSE sidecar starts before
// the containers, as GKE's native sidecar does from 1.29 (GoogleCloudPlatform/gcs-fuse-csi-driver
// issue #47).
func (v SharedVolume) MountDirs(dirs ...string) []corev1.VolumeMount {
	mounts := make([]corev1.VolumeMount, len(dirs))
	for i, dir := range dirs {
		mounts[i] = corev1.VolumeMount{Name: sharedVolumeName, MountPath: path.Join(v.MountPath, dir), SubPath: dir}
	}
	return mounts
}

// Supporting is the volume as the pods that do not train use it: running as
// SupportServiceAccountName.
func (v SharedVolume) Supporting() SharedVolume {
	v.ServiceAccountName = v.SupportServiceAccountName
	return v
}

// Annotations is a copy of PodAnnotations, nil when there are none, so that callers may add
// their own and an empty map never renders.
func (v SharedVolume) Annotations() map[string]string {
	if len(v.PodAnnotations) == 0 {
		return nil
	}
	return maps.Clone(v.PodAnnotations)
}
