package storage_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/internal/kube"
	"gke-rl/internal/recorder"
	"gke-rl/internal/recorder/recordertest"
	"gke-rl/storage"
	_ "gke-rl/test/golden" // every test binary accepts -update
)

const (
	lustreType     = "gcp:lustre/instance:Instance"
	connectionType = "gcp:servicenetworking/connection:Connection"
	addressType    = "gcp:compute/globalAddress:GlobalAddress"
	firewallType   = "gcp:compute/firewall:Firewall"
	bucketType     = "gcp:storage/bucket:Bucket"
	memberType     = "gcp:storage/bucketIAMMember:BucketIAMMember"
	pvType         = "kubernetes:core/v1:PersistentVolume"
	pvcType        = "kubernetes:core/v1:PersistentVolumeClaim"
	ksaType        = "kubernetes:core/v1:ServiceAccount"
)

func lustreFixture() *storage.LustreArgs {
	return &storage.LustreArgs{
		LustreSpec: storage.LustreSpec{
			Project: "acme-rl", Zone: "us-east1-b", NamePrefix: "rl",
			PSAPrefixLength: 20, CapacityGiB: 18000, ThroughputMBpsPerTiB: 500,
			Filesystem: "lustrefs", GKESupport: true, Protect: true,
		},
		Network:            pulumi.String("projects/acme-rl/global/networks/rl-net"),
		NodeServiceAccount: pulumi.String("rl-nodes@acme-rl.iam.gserviceaccount.com"),
		Placement:          kube.Placement{Namespace: "gke-rl"},
	}
}

func bucketFixture() *storage.BucketArgs {
	return &storage.BucketArgs{
		BucketSpec: storage.BucketSpec{Project: "acme-rl", Region: "us-south1", Name: "acme-rl-data", NamePrefix: "rl", Protect: true, FileCacheMiB: 6144000},
		Placement:  kube.Placement{Namespace: "gke-rl"},
	}
}

func recordLustre(t *testing.T, args *storage.LustreArgs) *recorder.Recording {
	t.Helper()
	return recordertest.Record(t, func(ctx *pulumi.Context) error {
		_, err := storage.NewLustre(ctx, "storage", args)
		return err
	})
}

func recordBucket(t *testing.T, args *storage.BucketArgs) *recorder.Recording {
	t.Helper()
	return recordertest.Record(t, func(ctx *pulumi.Context) error {
		_, err := storage.NewBucket(ctx, "storage", args)
		return err
	})
}

// input reads a resource's input, failing the test when it is not set.
var input = recordertest.Input

func TestLustreInstanceAndPSA(t *testing.T) {
	rec := recordLustre(t, lustreFixture())
	inst := rec.Find(lustreType, "storage-lustre")
	assert.Equal(t, "18000", input(t, inst, "capacityGib"))
	assert.Equal(t, "500", input(t, inst, "perUnitStorageThroughput"))
	assert.Equal(t, "lustrefs", input(t, inst, "filesystem"))
	assert.Equal(t, "us-east1-b", input(t, inst, "location"), "next to the GPU nodes")
	assert.Equal(t, "projects/acme-rl/global/networks/rl-net", input(t, inst, "network"))

	addr := rec.Find(addressType, "storage-psa")
	assert.Equal(t, "VPC_PEERING", input(t, addr, "purpose"))
	assert.EqualValues(t, 20, input(t, addr, "prefixLength"))
	conn := rec.Find(connectionType, "storage-psa")
	assert.Equal(t, "servicenetworking.googleapis.com", input(t, conn, "service"))
	assert.Equal(t, []any{"rl-psa"}, input(t, conn, "reservedPeeringRanges"))
}

func TestLustreWaitsOnlyForThePeering(t *testing.T) {
	rec := recordLustre(t, lustreFixture())
	inst := rec.Find(lustreType, "storage-lustre")
	closure := rec.DependencyClosure(inst)
	assert.True(t, closure[rec.Find(connectionType, "storage-psa").URN], "waits for the peering connection")
	assert.True(t, closure[rec.Find(addressType, "storage-psa").URN], "and so for the PSA range")
	for urn := range closure {
		assert.False(t, strings.HasPrefix(rec.ByURN(urn).Type, "kubernetes:"), "the instance must not wait for %s", urn)
	}
}

func TestLustreFirewallOpensTheInstancesPort(t *testing.T) {
	for _, gke := range []bool{true, false} {
		t.Run(fmt.Sprintf("gkeSupport=%v", gke), func(t *testing.T) {
			args := lustreFixture()
			args.GKESupport = gke
			rec := recordLustre(t, args)
			assert.Equal(t, gke, input(t, rec.Find(lustreType, "storage-lustre"), "gkeSupportEnabled"))
			fw := rec.Find(firewallType, "storage-lustre")
			allows := input(t, fw, "allows").([]any)
			require.Len(t, allows, 1)
			assert.Equal(t, []any{fmt.Sprint(storage.LustrePort(gke))}, allows[0].(map[string]any)["ports"])
			assert.Equal(t, "tcp", allows[0].(map[string]any)["protocol"])
			assert.Equal(t, "INGRESS", input(t, fw, "direction"))
			assert.Equal(t, []any{"10.255.0.0/20"}, input(t, fw, "sourceRanges"), "from the PSA range only")
			assert.Equal(t, []any{"rl-nodes@acme-rl.iam.gserviceaccount.com"}, input(t, fw, "targetServiceAccounts"), "to the cluster's nodes")
		})
	}
	assert.Equal(t, 6988, storage.LustrePort(true))
	assert.Equal(t, 988, storage.LustrePort(false))
}

func TestPVAndClaimBindBothWays(t *testing.T) {
	cases := map[string]struct {
		rec              *recorder.Recording
		driver, capacity string
	}{
		"a Lustre volume is bound to its claim":   {recordLustre(t, lustreFixture()), storage.LustreCSIDriver, "18000Gi"},
		"a GCS FUSE volume is bound to its claim": {recordBucket(t, bucketFixture()), storage.GCSFuseCSIDriver, "1Ti"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pv, pvc := tc.rec.OfType(pvType)[0], tc.rec.OfType(pvcType)[0]
			assert.Equal(t, input(t, pvc, "metadata.name"), input(t, pv, "spec.claimRef.name"))
			assert.Equal(t, input(t, pvc, "metadata.namespace"), input(t, pv, "spec.claimRef.namespace"))
			assert.Equal(t, input(t, pv, "metadata.name"), input(t, pvc, "spec.volumeName"))
			assert.Equal(t, "gke-rl", input(t, pvc, "metadata.namespace"))
			assert.Equal(t, storage.ClaimName, input(t, pvc, "metadata.name"))
			assert.Equal(t, "", input(t, pv, "spec.storageClassName"), "no provisioner takes part")
			assert.Equal(t, "", input(t, pvc, "spec.storageClassName"), "the default class stays away")
			assert.Equal(t, []any{"ReadWriteMany"}, input(t, pv, "spec.accessModes"))
			assert.Equal(t, []any{"ReadWriteMany"}, input(t, pvc, "spec.accessModes"))
			assert.Equal(t, "Retain", input(t, pv, "spec.persistentVolumeReclaimPolicy"))
			assert.Equal(t, tc.driver, input(t, pv, "spec.csi.driver"))
			assert.Equal(t, tc.capacity, input(t, pv, "spec.capacity.storage"))
			assert.Equal(t, tc.capacity, input(t, pvc, "spec.resources.requests.storage"))
		})
	}
}

func TestLustreVolumeAddressesTheInstance(t *testing.T) {
	rec := recordLustre(t, lustreFixture())
	pv := rec.OfType(pvType)[0]
	assert.Equal(t, "acme-rl/us-east1-b/rl-lustre", input(t, pv, "spec.csi.volumeHandle"))
	assert.Equal(t, recorder.FakeLustreIP, input(t, pv, "spec.csi.volumeAttributes.ip"), "parsed from the mount point")
	assert.Equal(t, "lustrefs", input(t, pv, "spec.csi.volumeAttributes.filesystem"))
	assert.True(t, rec.DependencyClosure(pv)[rec.Find(lustreType, "storage-lustre").URN])
}

func TestMountPointIP(t *testing.T) {
	ip, err := storage.MountPointIP("10.90.1.4@tcp:/lustrefs")
	require.NoError(t, err)
	assert.Equal(t, "10.90.1.4", ip)
	for _, bad := range []string{"", "10.90.1.4", "10.90.1.4:/fs", "@tcp:/fs", "10.90.1.4@o2ib:/fs"} {
		_, err := storage.MountPointIP(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestBucketSettings(t *testing.T) {
	rec := recordBucket(t, bucketFixture())
	b := rec.Find(bucketType, "storage-bucket")
	assert.Equal(t, "acme-rl-data", input(t, b, "name"))
	assert.Equal(t, "US-SOUTH1", input(t, b, "location"))
	assert.Equal(t, true, input(t, b, "hierarchicalNamespace.enabled"))
	assert.Equal(t, true, input(t, b, "uniformBucketLevelAccess"))
	assert.Equal(t, "enforced", input(t, b, "publicAccessPrevention"))
	assert.Equal(t, false, input(t, b, "forceDestroy"), "objects never go with the bucket")

	pv := rec.OfType(pvType)[0]
	assert.Equal(t, "acme-rl-data", input(t, pv, "spec.csi.volumeHandle"))
	var opts []string
	for _, o := range input(t, pv, "spec.mountOptions").([]any) {
		opts = append(opts, o.(string))
	}
	// Literal, not the function under test: GCS FUSE's own names (gcsfuse's config flags,
	// mount options form): implicit directories on, metadata caches never stale (ttl 0, no
	// negative entries) and unbounded, the file cache of the node's size with parallel
	// downloads and range reads cached, streaming writes.
	assert.Equal(t, []string{
		"implicit-dirs",
		"metadata-cache:negative-ttl-secs:0",
		"metadata-cache:ttl-secs:0",
		"metadata-cache:stat-cache-max-size-mb:-1",
		"metadata-cache:type-cache-max-size-mb:-1",
		"file-cache:max-size-mb:6144000",
		"file-cache:cache-file-for-range-read:true",
		"file-cache:enable-parallel-downloads:true",
		"read_ahead_kb=1024",
		"write:enable-streaming-writes:true",
		"write:global-max-blocks:200000",
	}, opts)
	assert.Contains(t, opts, "file-cache:max-size-mb:6144000", "bounded by what the node holds")
}

func TestBucketMemberIsTheServiceAccountsWorkloadIdentity(t *testing.T) {
	rec := recordBucket(t, bucketFixture())
	ksa := rec.Find(ksaType, "storage-service-account")
	member := rec.Find(memberType, "storage-object-user")
	want := "principal://iam.googleapis.com/projects/" + recorder.FakeProjectNumber + "/locations/global/workloadIdentityPools/acme-rl.svc.id.goog/subject/ns/gke-rl/sa/rl-storage"
	assert.Equal(t, want, input(t, member, "member"))
	assert.Equal(t, storage.BucketServiceAccount, input(t, ksa, "metadata.name"))
	assert.Equal(t, "roles/storage.objectUser", input(t, member, "role"))
	assert.Equal(t, "acme-rl-data", input(t, member, "bucket"), "on the bucket only")
	assert.Equal(t, storage.BucketServiceAccount, storage.BucketVolume("/data").ServiceAccountName, "pods run as the bound account")
}

func TestProtection(t *testing.T) {
	for _, protect := range []bool{true, false} {
		t.Run(fmt.Sprintf("protect=%v", protect), func(t *testing.T) {
			l := lustreFixture()
			l.Protect = protect
			lustre := recordLustre(t, l).Find(lustreType, "storage-lustre")
			assert.Equal(t, protect, lustre.Options.Protect, "destroy refuses to start while the instance is protected")
			assert.False(t, lustre.Options.RetainOnDelete)

			b := bucketFixture()
			b.Protect = protect
			bucket := recordBucket(t, b).Find(bucketType, "storage-bucket")
			assert.Equal(t, protect, bucket.Options.RetainOnDelete, "destroy leaves a protected bucket in place")
			assert.False(t, bucket.Options.Protect)
		})
	}
}

// The data-holding resources keep the URNs they had before names derived from the component's.
func TestRenamedChildrenKeepTheirURNs(t *testing.T) {
	lustre := recordLustre(t, lustreFixture()).Find(lustreType, "storage-lustre")
	assert.Equal(t, []string{"urn:pulumi:test::gke-rl::gke-rl:storage:Lustre$gcp:lustre/instance:Instance::lustre"}, lustre.Options.Aliases)
	bucket := recordBucket(t, bucketFixture()).Find(bucketType, "storage-bucket")
	assert.Equal(t, []string{"urn:pulumi:test::gke-rl::gke-rl:storage:Bucket$gcp:storage/bucket:Bucket::bucket"}, bucket.Options.Aliases)
}

// Storage that an earlier destroy kept is adopted by import, not created again.
func TestAdoptImportsTheKeptStorage(t *testing.T) {
	b := bucketFixture()
	b.Adopt = true
	assert.Equal(t, "acme-rl-data", recordBucket(t, b).Find(bucketType, "storage-bucket").Options.Import)
	assert.Empty(t, recordBucket(t, bucketFixture()).Find(bucketType, "storage-bucket").Options.Import, "a first up creates")

	l := lustreFixture()
	l.Adopt = true
	rec := recordLustre(t, l)
	assert.Equal(t, "projects/acme-rl/locations/us-east1-b/instances/rl-lustre", rec.Find(lustreType, "storage-lustre").Options.Import)
	assert.Equal(t, "projects/acme-rl/global/addresses/rl-psa", rec.Find(addressType, "storage-psa").Options.Import)
	assert.Equal(t, "projects%2Facme-rl%2Fglobal%2Fnetworks%2Frl-net:servicenetworking.googleapis.com", rec.Find(connectionType, "storage-psa").Options.Import)
	assert.Empty(t, rec.Find(firewallType, "storage-lustre").Options.Import, "what destroy deleted is created again")
}

// Which grants stop at the checkpoints, with and without training readers: the support account's
// always; the storage account's only once a training reader trains in its place (then it, too,
// never writes a checkpoint); a training reader's never; a support reader's always. The
// condition's title is the IAM condition's own, literal.
func TestTheBucketsGrantsStopAtTheCheckpointsWhereTheyShould(t *testing.T) {
	conditioned := func(rec *recorder.Recording, name string) bool {
		r := rec.Find(memberType, name)
		require.NotNil(t, r, "a grant %s", name)
		_, ok := r.Inputs["condition"]
		if ok {
			assert.Equal(t, "outside the checkpoints", input(t, r, "condition.title"), name)
			assert.Contains(t, input(t, r, "condition.expression"), `!resource.name.startsWith("projects/_/buckets/acme-rl-data/objects/checkpoints")`, name)
		}
		return ok
	}
	args := bucketFixture()
	args.CheckpointsPrefix = "checkpoints/"
	rec := recordBucket(t, args)
	assert.False(t, conditioned(rec, "storage-object-user"), "the storage account trains: the whole bucket")
	assert.True(t, conditioned(rec, "storage-object-user-support"), "the support account never reaches the checkpoints")
	assert.Len(t, rec.OfType(memberType), 2, "no reader, no further grant")

	args.Readers, args.SupportReaders = []string{"rl-trainer"}, []string{"rl-prep"}
	rec = recordBucket(t, args)
	assert.True(t, conditioned(rec, "storage-object-user"), "with a training reader, the storage account stops at the checkpoints")
	assert.True(t, conditioned(rec, "storage-object-user-support"))
	assert.False(t, conditioned(rec, "storage-object-user-rl-trainer"), "the training reader writes the checkpoints")
	assert.True(t, conditioned(rec, "storage-object-user-rl-prep"), "a support reader stops at the checkpoints")
}

// The components hand their resources to the program, which makes the pods wait for them.
func TestTheStorageComponentsReturnTheirResources(t *testing.T) {
	recordertest.Record(t, func(ctx *pulumi.Context) error {
		b, err := storage.NewBucket(ctx, "storage", bucketFixture())
		require.NoError(t, err)
		require.NotNil(t, b)
		for what, r := range map[string]any{"bucket": b.Bucket, "binding": b.Binding, "support binding": b.SupportBinding, "pv": b.PV, "claim": b.Claim} {
			assert.NotNil(t, r, what)
		}
		l, err := storage.NewLustre(ctx, "lustre", lustreFixture())
		require.NoError(t, err)
		require.NotNil(t, l)
		for what, r := range map[string]any{"instance": l.Instance, "pv": l.PV, "claim": l.Claim} {
			assert.NotNil(t, r, what)
		}
		return nil
	})
}
