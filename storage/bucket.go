package storage

import (
	"fmt"
	"strings"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/storage"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/internal/kube"
	"gke-rl/internal/naming"
)

const (
	// GCSFuseCSIDriver is GKE's Cloud Storage FUSE CSI driver.
	GCSFuseCSIDriver = "gcsfuse.csi.storage.gke.io"
	// GCSFuseAnnotation asks GKE to inject the FUSE sidecar into a pod.
	GCSFuseAnnotation = "gke-gcsfuse/volumes"
	// BucketServiceAccount is the Kubernetes service account the training pods (the Ray pods)
	// run as to reach the bucket: its principal alone may write the checkpoints.
	BucketServiceAccount = "rl-storage"
	// BucketSupportServiceAccount is the one the other pods that mount the bucket run as (the
	// data preparation, the gates, the submitter): its principal reaches every object but the
	// checkpoints. A checkpoint is code to the framework that resumes from it (verl v0.6.0 loads
	// its shards with torch.load(weights_only=False)), so no pod that does not train may write
	// one.
	BucketSupportServiceAccount = "rl-support"
	// BucketRole lets the service account read, write and delete objects, on this bucket only.
	BucketRole = "roles/storage.objectUser"
	// ViewerRole lets a service account list and read objects, on this bucket only: what a
	// read-only GCS FUSE mount takes.
	ViewerRole = "roles/storage.objectViewer"
	// bucketCapacity is nominal: the FUSE driver ignores it, but a PV and its claim need one.
	bucketCapacity = "1Ti"
)

// GCSFuseMountOptions are the verl guide's options for training: metadata caches without
// limits, a file cache (checkpoints and parquet files are read again and again) bounded by what
// the node's ephemeral storage holds, parallel downloads, and streaming writes so that a
// checkpoint does not stage on local disk first. The guide's unbounded file cache
// (`file-cache:max-size-mb:-1`) fills the node's ephemeral storage.
func GCSFuseMountOptions(fileCacheMiB int) []string {
	return []string{
		"implicit-dirs",
		"metadata-cache:negative-ttl-secs:0",
		"metadata-cache:ttl-secs:0",
		"metadata-cache:stat-cache-max-size-mb:-1",
		"metadata-cache:type-cache-max-size-mb:-1",
		fmt.Sprintf("file-cache:max-size-mb:%d", fileCacheMiB),
		"file-cache:cache-file-for-range-read:true",
		"file-cache:enable-parallel-downloads:true",
		"read_ahead_kb=1024",
		"write:enable-streaming-writes:true",
		"write:global-max-blocks:200000",
	}
}

// WorkloadIdentityPrincipal is the IAM principal of a Kubernetes service account under
// Workload Identity Federation for GKE: no Google service account and no key take part.
func WorkloadIdentityPrincipal(projectNumber, projectID, namespace, serviceAccount string) string {
	return fmt.Sprintf("principal://iam.googleapis.com/projects/%s/locations/global/workloadIdentityPools/%s.svc.id.goog/subject/ns/%s/sa/%s",
		projectNumber, projectID, namespace, serviceAccount)
}

// BucketSpec is the bucket as the config decides it: plain values.
type BucketSpec struct {
	// Project is the project ID: it owns the bucket and names the Workload Identity pool.
	Project string
	// Region holds the bucket, next to the cluster.
	Region string
	// Name is the globally unique bucket name.
	Name string
	// NamePrefix starts the names of what the component creates (the cluster name).
	NamePrefix string
	// Protect keeps the bucket and its objects through `pulumi destroy` (retained on delete);
	// without it, destroy deletes the bucket with its objects.
	Protect bool
	// FileCacheMiB bounds GCS FUSE's file cache on each node.
	FileCacheMiB int
	// Adopt takes over the existing bucket of the same name (a retained bucket is no longer in
	// the stack's state, and creating it again fails with 409 "you already own this bucket").
	Adopt bool
	// Readers are further Kubernetes service accounts of the namespace whose pods train and
	// mount the bucket (the W&B token's reader): each is granted the access of
	// BucketServiceAccount, whose own access then stops at the checkpoints. SupportReaders are those of pods that do not train (the Hugging Face
	// token's reader, the data preparation's): each is granted the access of
	// BucketSupportServiceAccount. Their owner creates them.
	Readers, SupportReaders []string
	// Viewers are Kubernetes service accounts of the namespace whose pods read the bucket and
	// write nothing (the experiments' launches, which read a finished run's record among the
	// checkpoints): each is granted ViewerRole on the bucket.
	Viewers []string
	// CheckpointsPrefix is the object prefix under which the runs' checkpoint directories are
	// ("checkpoints/"): the support accounts' access stops there.
	CheckpointsPrefix string
}

// OutsideCheckpoints is the IAM condition that keeps a grant on the bucket off the checkpoints:
// true for the bucket itself (listing it, which mounting takes) and for every object, folder (a
// hierarchical namespace's) and managed folder whose name does not start with the prefix's
// directory name. Cloud Storage evaluates conditions on resource.name,
// `projects/_/buckets/<bucket>/objects/<object>` (`.../folders/<path>/`,
// `.../managedFolders/<path>/`), with uniform bucket-level access, which the bucket has.
//
// The name is matched without its trailing slash: the object named `checkpoints` itself is the
// directory's too. GCS FUSE presents an empty object with `gcsfuse_symlink_target` metadata as a
// symbolic link (its semantics document, Symlink inodes), so a `checkpoints` object made before
// the training pods first make the directory would send every checkpoint to a prefix the
// support principals write. Objects whose names merely begin with the word (`checkpoints-old`)
// are outside their grant too, which nothing of theirs needs.
func OutsideCheckpoints(bucket, prefix string) string {
	dir := strings.TrimSuffix(prefix, "/")
	return fmt.Sprintf(`!resource.name.startsWith("projects/_/buckets/%[1]s/objects/%[2]s") && !resource.name.startsWith("projects/_/buckets/%[1]s/folders/%[2]s") && !resource.name.startsWith("projects/_/buckets/%[1]s/managedFolders/%[2]s")`, bucket, dir)
}

// BucketArgs are the spec and where its in-cluster objects go.
type BucketArgs struct {
	BucketSpec
	// Placement is where the service account, the PV and the claim go.
	Placement kube.Placement
}

// Bucket is a Cloud Storage bucket mounted with GCS FUSE, reached through Workload Identity.
type Bucket struct {
	pulumi.ResourceState

	Bucket         *storage.Bucket
	ServiceAccount *corev1.ServiceAccount
	Binding        *storage.BucketIAMMember
	// SupportServiceAccount and SupportBinding are the account of the pods that do not train
	// and its grant, which stops at the checkpoints.
	SupportServiceAccount *corev1.ServiceAccount
	SupportBinding        *storage.BucketIAMMember
	// ReaderBindings grant BucketSpec.Readers, SupportReaders and Viewers the bucket.
	ReaderBindings []*storage.BucketIAMMember
	PV             *corev1.PersistentVolume
	Claim          *corev1.PersistentVolumeClaim
}

// BucketVolume is how pods mount a GCS FUSE claim: as the service account that Workload
// Identity lets into the bucket, with the annotation that injects the FUSE sidecar.
func BucketVolume(mountPath string) kube.SharedVolume {
	return kube.SharedVolume{
		ClaimName:                 ClaimName,
		MountPath:                 mountPath,
		ServiceAccountName:        BucketServiceAccount,
		SupportServiceAccountName: BucketSupportServiceAccount,
		PodAnnotations:            map[string]string{GCSFuseAnnotation: "true"},
	}
}

// NewBucket registers the bucket, the service account, its binding and the claim.
func NewBucket(ctx *pulumi.Context, name string, args *BucketArgs, opts ...pulumi.ResourceOption) (*Bucket, error) {
	b := &Bucket{}
	if err := ctx.RegisterComponentResource("gke-rl:storage:Bucket", name, b, opts...); err != nil {
		return nil, err
	}
	kids := naming.Children{Component: name, Parent: b}
	var err error

	bucketName, bucketOpts := kids.Of("bucket", "bucket", pulumi.RetainOnDelete(args.Protect))
	bucketOpts = adopt(args.Adopt, bucketOpts, pulumi.String(args.Name))
	b.Bucket, err = storage.NewBucket(ctx, bucketName, &storage.BucketArgs{
		Project:  pulumi.String(args.Project),
		Name:     pulumi.String(args.Name),
		Location: pulumi.String(strings.ToUpper(args.Region)),
		// A hierarchical namespace makes directory renames atomic and speeds up listing, which
		// checkpoint rotation does; it requires uniform access.
		HierarchicalNamespace:    &storage.BucketHierarchicalNamespaceArgs{Enabled: pulumi.Bool(true)},
		UniformBucketLevelAccess: pulumi.Bool(true),
		PublicAccessPrevention:   pulumi.String("enforced"),
		// The provider deletes a bucket that holds objects only with forceDestroy (it lists and
		// deletes them first; without it the delete fails and `pulumi destroy` stops there:
		// terraform-provider-google-beta at 6a9e0f0b, google-beta/services/storage/
		// resource_storage_bucket.go, resourceStorageBucketDelete). An unprotected bucket goes with
		// what it holds; a protected one is retained on delete, so no delete reaches it.
		ForceDestroy: pulumi.Bool(!args.Protect),
	}, bucketOpts...)
	if err != nil {
		return nil, fmt.Errorf("bucket: %w", err)
	}

	saName, saOpts := kids.Of("service-account", "storage")
	b.ServiceAccount, err = corev1.NewServiceAccount(ctx, saName, &corev1.ServiceAccountArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(BucketServiceAccount), Namespace: pulumi.String(args.Placement.Namespace)},
	}, args.Placement.Namespaced(saOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("service account: %w", err)
	}

	// The project number comes from the bucket, not from the getProject invoke, which reads
	// Cloud Billing too and so needs more than a preview should (and fails without Google
	// access).
	principal := func(account string) pulumi.StringOutput {
		return b.Bucket.ProjectNumber.ApplyT(func(number any) string {
			return WorkloadIdentityPrincipal(fmt.Sprint(number), args.Project, args.Placement.Namespace, account)
		}).(pulumi.StringOutput)
	}
	outside := &storage.BucketIAMMemberConditionArgs{
		Title:       pulumi.String("outside the checkpoints"),
		Description: pulumi.String("pods that do not train never write a checkpoint, which the next resume loads as code"),
		Expression:  pulumi.String(OutsideCheckpoints(args.Name, args.CheckpointsPrefix)),
	}
	grantRole := func(role, name, urnName, account string, condition *storage.BucketIAMMemberConditionArgs) (*storage.BucketIAMMember, error) {
		bindingName, bindingOpts := kids.Of(name, urnName)
		ba := &storage.BucketIAMMemberArgs{Bucket: b.Bucket.Name, Role: pulumi.String(role), Member: principal(account)}
		if condition != nil {
			ba.Condition = condition
		}
		return storage.NewBucketIAMMember(ctx, bindingName, ba, bindingOpts...)
	}
	grant := func(name, urnName, account string, condition *storage.BucketIAMMemberConditionArgs) (*storage.BucketIAMMember, error) {
		return grantRole(BucketRole, name, urnName, account, condition)
	}
	member := principal(BucketServiceAccount)
	// With a training reader the Ray pods run as it, and BucketServiceAccount trains no more:
	// its access stops at the checkpoints like the support account's.
	var storageCondition *storage.BucketIAMMemberConditionArgs
	if len(args.Readers) > 0 {
		storageCondition = outside
	}
	b.Binding, err = grant("object-user", "storage-object-user", BucketServiceAccount, storageCondition)
	if err != nil {
		return nil, fmt.Errorf("bucket binding: %w", err)
	}

	supportName, supportOpts := kids.Of("support-service-account", "")
	b.SupportServiceAccount, err = corev1.NewServiceAccount(ctx, supportName, &corev1.ServiceAccountArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(BucketSupportServiceAccount), Namespace: pulumi.String(args.Placement.Namespace)},
	}, args.Placement.Namespaced(supportOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("support service account: %w", err)
	}
	b.SupportBinding, err = grant("object-user-support", "", BucketSupportServiceAccount, outside)
	if err != nil {
		return nil, fmt.Errorf("bucket binding of %s: %w", BucketSupportServiceAccount, err)
	}

	for _, reader := range args.Readers {
		binding, err := grant("object-user-"+reader, "", reader, nil)
		if err != nil {
			return nil, fmt.Errorf("bucket binding of %s: %w", reader, err)
		}
		b.ReaderBindings = append(b.ReaderBindings, binding)
	}
	for _, reader := range args.SupportReaders {
		binding, err := grant("object-user-"+reader, "", reader, outside)
		if err != nil {
			return nil, fmt.Errorf("bucket binding of %s: %w", reader, err)
		}
		b.ReaderBindings = append(b.ReaderBindings, binding)
	}

	for _, viewer := range args.Viewers {
		binding, err := grantRole(ViewerRole, "object-viewer-"+viewer, "", viewer, nil)
		if err != nil {
			return nil, fmt.Errorf("bucket binding of %s: %w", viewer, err)
		}
		b.ReaderBindings = append(b.ReaderBindings, binding)
	}

	b.PV, b.Claim, err = newClaim(ctx, kids, "gcsfuse", claimArgs{
		Capacity:     bucketCapacity,
		MountOptions: GCSFuseMountOptions(args.FileCacheMiB),
		// Deleting the volume object never touches the bucket; Retain says so to a reader.
		Reclaim: "Retain",
		Source: corev1.CSIPersistentVolumeSourceArgs{
			Driver:       pulumi.String(GCSFuseCSIDriver),
			VolumeHandle: b.Bucket.Name,
			VolumeAttributes: pulumi.StringMap{
				// The driver's own access check at mount time slows pod start; the binding
				// above grants the access.
				"skipCSIBucketAccessCheck":       pulumi.String("true"),
				"gcsfuseMetadataPrefetchOnMount": pulumi.String("true"),
			},
		},
	}, args.Placement)
	if err != nil {
		return nil, fmt.Errorf("gcsfuse claim: %w", err)
	}

	if err := ctx.RegisterResourceOutputs(b, pulumi.Map{
		"bucket":         b.Bucket.Name,
		"url":            b.Bucket.Url,
		"serviceAccount": b.ServiceAccount.Metadata.Name().Elem(),
		"member":         member,
		"claim":          pulumi.String(ClaimName),
	}); err != nil {
		return nil, err
	}
	return b, nil
}

// Ready implements Shared: pods wait for the claim, the service accounts they run as and their
// access to the bucket, and the token readers' access.
func (b *Bucket) Ready() []pulumi.Resource {
	ready := []pulumi.Resource{b.Claim, b.ServiceAccount, b.Binding, b.SupportServiceAccount, b.SupportBinding}
	for _, r := range b.ReaderBindings {
		ready = append(ready, r)
	}
	return ready
}
