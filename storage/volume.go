// Package storage builds the shared volume that holds the data, the models and the checkpoints:
// a Managed Lustre instance reached over Private Service Access, or a Cloud Storage bucket
// mounted with GCS FUSE through Workload Identity. Either one ends in a PersistentVolume and a
// claim that the Ray pods mount; Volume is all the rest of the program needs to know.
package storage

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/infra/kube"
)

// ClaimName is the PersistentVolumeClaim that every Ray pod mounts, whichever the storage type.
const ClaimName = "rl-shared"

// Volume is how pods use the shared storage.
type Volume struct {
	kube.SharedVolume
	// Ready are the objects pods wait for: the claim and, for GCS FUSE, the service account and
	// its bucket binding.
	Ready []pulumi.Resource
}

// Shared is a storage component: Lustre or Bucket.
type Shared interface {
	pulumi.ComponentResource
	// Volume describes how pods mount the storage.
	Volume() Volume
}

// Common are the settings both storage types take.
type Common struct {
	// NamePrefix starts the names of what the storage creates.
	NamePrefix string
	// Namespace is the workload namespace, for the claim (and the bucket's service account).
	Namespace pulumi.StringInput
	MountPath string
	// Protect keeps the data through `pulumi destroy`: a Lustre instance is protected (destroy
	// refuses to start), a bucket is retained (destroy leaves it and its objects in place).
	Protect bool
	// InCluster are the options of in-cluster objects (the cluster's provider, DeletedWith).
	InCluster []pulumi.ResourceOption
}

// claimArgs are the settings a PersistentVolume and its claim share.
type claimArgs struct {
	// PVName is the cluster-scoped PersistentVolume's name.
	PVName    string
	Namespace pulumi.StringInput
	// Capacity is a Kubernetes quantity such as 18000Gi.
	Capacity string
	// Source is the CSI volume the PV points at.
	Source       corev1.CSIPersistentVolumeSourceArgs
	MountOptions []string
	// Reclaim is the PV's reclaim policy.
	Reclaim string
}

// newClaim registers a statically provisioned PersistentVolume and the claim bound to it, each
// naming the other, so that no StorageClass or provisioner takes part.
func newClaim(ctx *pulumi.Context, name string, args claimArgs, opts ...pulumi.ResourceOption) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim, error) {
	rwx := pulumi.StringArray{pulumi.String("ReadWriteMany")}
	// An empty class keeps the cluster's default StorageClass away from the claim.
	noClass := pulumi.String("")
	var mountOptions pulumi.StringArray
	for _, o := range args.MountOptions {
		mountOptions = append(mountOptions, pulumi.String(o))
	}
	source := args.Source
	pv, err := corev1.NewPersistentVolume(ctx, name+"-pv", &corev1.PersistentVolumeArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(args.PVName)},
		Spec: &corev1.PersistentVolumeSpecArgs{
			AccessModes:                   rwx,
			Capacity:                      pulumi.StringMap{"storage": pulumi.String(args.Capacity)},
			PersistentVolumeReclaimPolicy: pulumi.String(args.Reclaim),
			StorageClassName:              noClass,
			VolumeMode:                    pulumi.String("Filesystem"),
			MountOptions:                  mountOptions,
			ClaimRef: &corev1.ObjectReferenceArgs{
				Name:      pulumi.String(ClaimName),
				Namespace: args.Namespace,
			},
			Csi: &source,
		},
	}, opts...)
	if err != nil {
		return nil, nil, err
	}
	pvc, err := corev1.NewPersistentVolumeClaim(ctx, name+"-pvc", &corev1.PersistentVolumeClaimArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(ClaimName), Namespace: args.Namespace},
		Spec: &corev1.PersistentVolumeClaimSpecArgs{
			AccessModes:      rwx,
			StorageClassName: noClass,
			VolumeName:       pv.Metadata.Name().Elem(),
			Resources: &corev1.VolumeResourceRequirementsArgs{
				Requests: pulumi.StringMap{"storage": pulumi.String(args.Capacity)},
			},
		},
	}, opts...)
	if err != nil {
		return nil, nil, err
	}
	return pv, pvc, nil
}
