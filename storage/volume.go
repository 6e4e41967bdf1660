// Package storage builds the shared volume that holds the data, the models and the checkpoints:
// a Managed Lustre instance reached over Private Service Access, or a Cloud Storage bucket
// mounted with GCS FUSE through Workload Identity. Either one ends in a PersistentVolume and a
// claim that the Ray pods mount.
package storage

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/internal/kube"
	"gke-rl/internal/naming"
)

// ClaimName is the PersistentVolumeClaim that every Ray pod mounts, whichever the storage type.
const ClaimName = "rl-shared"

// Shared is a storage component: Lustre or Bucket.
type Shared interface {
	pulumi.ComponentResource
	// Ready are the objects pods that mount the volume wait for.
	Ready() []pulumi.Resource
}

// claimArgs are the settings a PersistentVolume and its claim share.
type claimArgs struct {
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
//
// The volume is named after the claim's namespace and its role (`gke-rl-smoke-lustre`): once
// bound, a volume's claimRef keeps the claim's UID (the PV controller writes it), so updating it
// to name a claim in another namespace leaves it "already bound to a different claim" and the
// new claim pending forever (the real engine showed it: test/engine,
// TestANamespaceMoveUnderTheRealEngine). A stack whose namespace moves gets a new volume of a
// new name, bound to the new claim, and the old one is deleted after the old claim (Retain: the
// storage stays). For a namespace that is the cluster name, the name is the one volumes had when
// they were named after the cluster.
func newClaim(ctx *pulumi.Context, kids naming.Children, role string, args claimArgs, p kube.Placement) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim, error) {
	rwx := pulumi.StringArray{pulumi.String("ReadWriteMany")}
	// An empty class keeps the cluster's default StorageClass away from the claim.
	noClass := pulumi.String("")
	var mountOptions pulumi.StringArray
	for _, o := range args.MountOptions {
		mountOptions = append(mountOptions, pulumi.String(o))
	}
	source := args.Source
	pvName, pvOpts := kids.Of(role+"-pv", role+"-pv")
	pv, err := corev1.NewPersistentVolume(ctx, pvName, &corev1.PersistentVolumeArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(naming.New(p.Namespace).Name(63, role))},
		Spec: &corev1.PersistentVolumeSpecArgs{
			AccessModes:                   rwx,
			Capacity:                      pulumi.StringMap{"storage": pulumi.String(args.Capacity)},
			PersistentVolumeReclaimPolicy: pulumi.String(args.Reclaim),
			StorageClassName:              noClass,
			VolumeMode:                    pulumi.String("Filesystem"),
			MountOptions:                  mountOptions,
			ClaimRef: &corev1.ObjectReferenceArgs{
				Name:      pulumi.String(ClaimName),
				Namespace: pulumi.String(p.Namespace),
			},
			Csi: &source,
		},
	}, p.ClusterScoped(pvOpts...)...)
	if err != nil {
		return nil, nil, err
	}
	pvcName, pvcOpts := kids.Of(role+"-pvc", role+"-pvc")
	pvc, err := corev1.NewPersistentVolumeClaim(ctx, pvcName, &corev1.PersistentVolumeClaimArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(ClaimName), Namespace: pulumi.String(p.Namespace)},
		Spec: &corev1.PersistentVolumeClaimSpecArgs{
			AccessModes:      rwx,
			StorageClassName: noClass,
			VolumeName:       pv.Metadata.Name().Elem(),
			Resources: &corev1.VolumeResourceRequirementsArgs{
				Requests: pulumi.StringMap{"storage": pulumi.String(args.Capacity)},
			},
		},
	}, p.Namespaced(pvcOpts...)...)
	if err != nil {
		return nil, nil, err
	}
	return pv, pvc, nil
}
