package storage_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/infra/plan"
	"gke-rl/infra/plan/plantest"
	"gke-rl/storage"
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
	clusterType    = "gcp:container/cluster:Cluster"
	nodePoolType   = "gcp:container/nodePool:NodePool"
	networkType    = "gcp:compute/network:Network"
	accountType    = "gcp:serviceaccount/account:Account"
)

func str(t *testing.T, res *plan.Resource, path string) string {
	t.Helper()
	v, ok := plantest.Input(t, res, path).(string)
	require.True(t, ok, "%s %s: %s is not a string", res.Type, res.Name, path)
	return v
}

func TestEitherStorageTypeOnEitherStack(t *testing.T) {
	for _, stack := range plantest.Stacks {
		for _, typ := range []string{"lustre", "gcsfuse"} {
			t.Run(fmt.Sprintf("%s with %s storage", stack, typ), func(t *testing.T) {
				res := plantest.Plan(t, stack, "storage.type="+typ)
				lustres, buckets := res.OfType(lustreType), res.OfType(bucketType)
				if typ == "lustre" {
					require.Len(t, lustres, 1)
					assert.Empty(t, buckets)
					assert.Len(t, res.OfType(connectionType), 1)
					assert.Empty(t, res.OfType(memberType))
				} else {
					require.Len(t, buckets, 1)
					assert.Empty(t, lustres)
					assert.Empty(t, res.OfType(connectionType), "no PSA without Lustre")
					assert.Len(t, res.OfType(memberType), 1)
					assert.Len(t, res.OfType(ksaType), 1)
				}
				require.Len(t, res.OfType(pvType), 1)
				require.Len(t, res.OfType(pvcType), 1)
				assert.Equal(t, storage.ClaimName, res.Outputs["storageClaim"])
				assert.Equal(t, typ, res.Outputs["storageType"])
			})
		}
	}
}

func TestB200SpotPlansLustreAtTier500(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	inst := res.Find(lustreType, "lustre")
	require.NotNil(t, inst)
	assert.Equal(t, "18000", str(t, inst, "capacityGib"))
	assert.Equal(t, "500", str(t, inst, "perUnitStorageThroughput"))
	assert.Equal(t, "lustrefs", str(t, inst, "filesystem"))
	assert.Equal(t, "us-east1-b", str(t, inst, "location"), "next to the GPU nodes")
	assert.Equal(t, "projects/your-project-id/global/networks/ray-a4-gpu-spot-net", str(t, inst, "network"))

	addr := res.Find(addressType, "psa")
	require.NotNil(t, addr)
	assert.Equal(t, "VPC_PEERING", str(t, addr, "purpose"))
	assert.EqualValues(t, 20, plantest.Input(t, addr, "prefixLength"))
	conn := res.Find(connectionType, "psa")
	assert.Equal(t, "servicenetworking.googleapis.com", str(t, conn, "service"))
	assert.Equal(t, []any{"ray-a4-gpu-spot-psa"}, plantest.Input(t, conn, "reservedPeeringRanges"))
	assert.Equal(t, 8789, res.Outputs["storageWriteMBps"], "17.6 TiB × 500 MB/s per TiB")
}

func TestLustreStartsWithoutWaitingForTheCluster(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	inst := res.Find(lustreType, "lustre")
	closure := res.DependencyClosure(inst)
	assert.True(t, closure[res.Find(connectionType, "psa").URN], "waits for the peering connection")
	assert.True(t, closure[res.Find(addressType, "psa").URN], "and so for the PSA range")
	assert.True(t, closure[res.Find(networkType, "main").URN], "and the main VPC")
	for urn := range closure {
		dep := res.ByURN(urn)
		require.NotNil(t, dep, urn)
		assert.NotContains(t, []string{clusterType, nodePoolType}, dep.Type, "the instance must not wait for %s", urn)
		assert.False(t, strings.HasPrefix(dep.Type, "kubernetes:"), "the instance must not wait for %s", urn)
	}
}

func TestLustrePortFollowsGKESupportAndTheClusterFlag(t *testing.T) {
	for _, gke := range []bool{true, false} {
		t.Run(fmt.Sprintf("gkeSupport=%v", gke), func(t *testing.T) {
			res := plantest.Plan(t, "b200-spot", fmt.Sprintf("storage.gkeSupport=%v", gke))
			inst := res.Find(lustreType, "lustre")
			assert.Equal(t, gke, plantest.Input(t, inst, "gkeSupportEnabled"))
			cl := res.Find(clusterType, "gke")
			assert.Equal(t, gke, plantest.Input(t, cl, "addonsConfig.lustreCsiDriverConfig.enableLegacyLustrePort"), "the cluster uses the port the instance listens on")

			fw := res.Find(firewallType, "lustre")
			require.NotNil(t, fw)
			allows := plantest.Input(t, fw, "allows").([]any)
			require.Len(t, allows, 1)
			assert.Equal(t, []any{fmt.Sprint(storage.LustrePort(gke))}, allows[0].(map[string]any)["ports"])
			assert.Equal(t, "tcp", allows[0].(map[string]any)["protocol"])
			assert.Equal(t, "INGRESS", str(t, fw, "direction"))
			assert.Equal(t, []any{"10.255.0.0/20"}, plantest.Input(t, fw, "sourceRanges"), "from the PSA range only")
			assert.Equal(t, []any{"ray-a4-gpu-spot-nodes@your-project-id.iam.gserviceaccount.com"}, plantest.Input(t, fw, "targetServiceAccounts"), "to the cluster's nodes")
			assert.Equal(t, "projects/your-project-id/global/networks/ray-a4-gpu-spot-net", str(t, fw, "network"))
		})
	}
	assert.Equal(t, 6988, storage.LustrePort(true))
	assert.Equal(t, 988, storage.LustrePort(false))
}

func TestPVAndClaimBindBothWays(t *testing.T) {
	cases := map[string]struct {
		stack, typ, driver, capacity string
	}{
		"a Lustre volume is bound to its claim":   {"b200-spot", "lustre", storage.LustreCSIDriver, "18000Gi"},
		"a GCS FUSE volume is bound to its claim": {"h200-reserved", "gcsfuse", storage.GCSFuseCSIDriver, "1Ti"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := plantest.Plan(t, tc.stack, "storage.type="+tc.typ)
			pv, pvc := res.OfType(pvType)[0], res.OfType(pvcType)[0]
			assert.Equal(t, str(t, pvc, "metadata.name"), str(t, pv, "spec.claimRef.name"))
			assert.Equal(t, str(t, pvc, "metadata.namespace"), str(t, pv, "spec.claimRef.namespace"))
			assert.Equal(t, str(t, pv, "metadata.name"), str(t, pvc, "spec.volumeName"))
			assert.Equal(t, "gke-rl", str(t, pvc, "metadata.namespace"))
			assert.Equal(t, "", str(t, pv, "spec.storageClassName"), "no provisioner takes part")
			assert.Equal(t, "", str(t, pvc, "spec.storageClassName"), "the default class stays away")
			assert.Equal(t, []any{"ReadWriteMany"}, plantest.Input(t, pv, "spec.accessModes"))
			assert.Equal(t, []any{"ReadWriteMany"}, plantest.Input(t, pvc, "spec.accessModes"))
			assert.Equal(t, "Retain", str(t, pv, "spec.persistentVolumeReclaimPolicy"))
			assert.Equal(t, tc.driver, str(t, pv, "spec.csi.driver"))
			assert.Equal(t, tc.capacity, str(t, pv, "spec.capacity.storage"))
			assert.Equal(t, tc.capacity, str(t, pvc, "spec.resources.requests.storage"))
		})
	}
}

func TestLustreVolumeAddressesTheInstance(t *testing.T) {
	res := plantest.Plan(t, "b200-spot")
	pv := res.OfType(pvType)[0]
	assert.Equal(t, "your-project-id/us-east1-b/ray-a4-gpu-spot-lustre", str(t, pv, "spec.csi.volumeHandle"))
	assert.Equal(t, plan.FakeLustreIP, str(t, pv, "spec.csi.volumeAttributes.ip"), "parsed from the mount point")
	assert.Equal(t, "lustrefs", str(t, pv, "spec.csi.volumeAttributes.filesystem"))
	closure := res.DependencyClosure(pv)
	assert.True(t, closure[res.Find(lustreType, "lustre").URN])
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
	res := plantest.Plan(t, "h200-reserved")
	b := res.Find(bucketType, "bucket")
	require.NotNil(t, b)
	assert.Equal(t, "your-project-id-verl-h200-rl", str(t, b, "name"))
	assert.Equal(t, "US-SOUTH1", str(t, b, "location"))
	assert.Equal(t, true, plantest.Input(t, b, "hierarchicalNamespace.enabled"))
	assert.Equal(t, true, plantest.Input(t, b, "uniformBucketLevelAccess"))
	assert.Equal(t, "enforced", str(t, b, "publicAccessPrevention"))
	assert.Equal(t, false, plantest.Input(t, b, "forceDestroy"), "objects never go with the bucket")

	pv := res.OfType(pvType)[0]
	assert.Equal(t, "your-project-id-verl-h200-rl", str(t, pv, "spec.csi.volumeHandle"))
	var opts []string
	for _, o := range plantest.Input(t, pv, "spec.mountOptions").([]any) {
		opts = append(opts, o.(string))
	}
	assert.Equal(t, storage.GCSFuseMountOptions, opts)
	assert.Contains(t, opts, "write:enable-streaming-writes:true")
	assert.Equal(t, "gs://your-project-id-verl-h200-rl", res.Outputs["bucket"])
}

func TestBucketMemberIsTheServiceAccountsWorkloadIdentity(t *testing.T) {
	res := plantest.Plan(t, "h200-reserved")
	ksa := res.Find(ksaType, "storage")
	require.NotNil(t, ksa)
	member := res.Find(memberType, "storage-object-user")
	require.NotNil(t, member)
	want := fmt.Sprintf("principal://iam.googleapis.com/projects/%s/locations/global/workloadIdentityPools/your-project-id.svc.id.goog/subject/ns/%s/sa/%s",
		plan.FakeProjectNumber, str(t, ksa, "metadata.namespace"), str(t, ksa, "metadata.name"))
	assert.Equal(t, want, str(t, member, "member"))
	assert.Equal(t, storage.WorkloadIdentityPrincipal(plan.FakeProjectNumber, "your-project-id", "gke-rl", storage.BucketServiceAccount), want)
	assert.Equal(t, "roles/storage.objectUser", str(t, member, "role"))
	assert.Equal(t, "your-project-id-verl-h200-rl", str(t, member, "bucket"), "on the bucket only")
	assert.Equal(t, res.Outputs["storageServiceAccount"], str(t, ksa, "metadata.name"))
}

func TestProtection(t *testing.T) {
	for _, protect := range []bool{true, false} {
		t.Run(fmt.Sprintf("storage.protect=%v", protect), func(t *testing.T) {
			override := fmt.Sprintf("storage.protect=%v", protect)
			lustre := plantest.Plan(t, "b200-spot", override).Find(lustreType, "lustre")
			assert.Equal(t, protect, lustre.Options.Protect, "destroy refuses to start while the instance is protected")
			assert.False(t, lustre.Options.RetainOnDelete)

			bucket := plantest.Plan(t, "h200-reserved", override).Find(bucketType, "bucket")
			assert.Equal(t, protect, bucket.Options.RetainOnDelete, "destroy leaves a protected bucket in place")
			assert.False(t, bucket.Options.Protect)
		})
	}
}

func TestCapacityOffTheTierStepNamesTheNearestSizes(t *testing.T) {
	_, err := plantest.TryPlan("b200-spot", "storage.capacityGib=20000")
	var cfgErr *plan.ConfigError
	require.ErrorAs(t, err, &cfgErr)
	require.Len(t, cfgErr.Problems, 1)
	assert.Equal(t, "storage.capacityGib", cfgErr.Problems[0].Key)
	assert.Contains(t, cfgErr.Problems[0].Message, "18000 or 36000")
}
