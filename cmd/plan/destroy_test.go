package plan_test

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gke-rl/cmd"
	"gke-rl/cmd/plan"
	"gke-rl/infra/offline"
	"gke-rl/internal/cost"
	"gke-rl/test/plantest"
)

// stepOf is the destroy step (from 1) in which a resource goes, 0 when it does not.
func stepOf(d *plan.DestroyPlan, typ, name string) int {
	for i, wave := range d.Steps {
		for _, r := range wave {
			if r.Type == typ && r.Name == name {
				return i + 1
			}
		}
	}
	return 0
}

func stays(d *plan.DestroyPlan) map[string]string {
	out := map[string]string{}
	for _, k := range d.Stays {
		out[k.Resource.Name+" "+k.Resource.Type] = k.Why
	}
	return out
}

func instanceGiB(t *testing.T, res *offline.Result) int {
	t.Helper()
	v := plantest.Input(t, res.Find("gcp:lustre/instance:Instance", "storage-lustre"), "capacityGib")
	n, err := strconv.Atoi(fmt.Sprint(v))
	require.NoError(t, err)
	return n
}

func keptOf(d *plan.DestroyPlan, typ string) plan.Kept {
	for _, k := range d.Stays {
		if k.Resource.Type == typ {
			return k
		}
	}
	return plan.Kept{}
}

func resourceOf(d *plan.DestroyPlan, typ string) *offline.Resource {
	for _, wave := range d.Steps {
		for _, r := range wave {
			if r.Type == typ {
				return r
			}
		}
	}
	return nil
}

func TestDestroyPlan(t *testing.T) {
	const (
		lustre  = "gcp:lustre/instance:Instance"
		conn    = "gcp:servicenetworking/connection:Connection"
		address = "gcp:compute/globalAddress:GlobalAddress"
		network = "gcp:compute/network:Network"
		command = "command:local:Command"
		bucket  = "gcp:storage/bucket:Bucket"
		cluster = "gcp:container/cluster:Cluster"
		pool    = "gcp:container/nodePool:NodePool"
	)
	for _, storage := range []string{"lustre", "gcsfuse"} {
		for _, protect := range []bool{true, false} {
			for _, stack := range plantest.Stacks {
				t.Run(fmt.Sprintf("%s on %s, protect=%v", stack, storage, protect), func(t *testing.T) {
					res := plantest.Plan(t, stack, "storage.type="+storage, fmt.Sprintf("storage.protect=%v", protect))
					d := plan.Destroy(res)
					kept := stays(d)

					assert.Positive(t, stepOf(d, cluster, "cluster-gke"), "the cluster and its GPUs always go")
					assert.Less(t, stepOf(d, pool, "cluster-gpu"), stepOf(d, cluster, "cluster-gke"), "pools before their cluster")
					assert.NotEmpty(t, d.WithCluster, "in-cluster objects go with the cluster, without API calls")
					for _, r := range d.WithCluster {
						assert.NotZero(t, r.Options.DeletedWith)
					}

					switch {
					case storage == "lustre" && protect:
						require.Len(t, d.Protected, 1, "a plain destroy stops at once")
						assert.Equal(t, "protected (storage.protect)", kept["storage-lustre "+lustre])
						for _, dep := range []string{"storage-psa " + conn, "storage-psa " + address, "networks-main " + network, "storage-psa-cleanup " + command} {
							assert.Equal(t, "a dependency of a protected resource", kept[dep], dep)
						}
						assert.Len(t, kept, 5, "nothing else stays: %v", kept)
						assert.Zero(t, stepOf(d, lustre, "storage-lustre"))
						instance := keptOf(d, lustre)
						require.NotNil(t, instance.Monthly(), "the kept instance says what it bills")
						// Managed Lustre's price is recorded for Iowa alone: the kept instance is
						// priced at it (capacity × $0.34 a GiB-month at 500 MB/s per TiB), and a
						// price file with the region's own price replaces it.
						require.True(t, instance.Monthly().Known)
						assert.InDelta(t, 0.34*float64(instanceGiB(t, plantest.Plan(t, stack, "storage.type="+storage, fmt.Sprintf("storage.protect=%v", protect)))), instance.Monthly().USD, 0.01)
						assert.Empty(t, d.StaysMonthly().Unknown)
						priced := plantest.Plan(t, stack, "storage.type="+storage, fmt.Sprintf("storage.protect=%v", protect))
						sku := instance.Bill.SKU
						priced.Price(cost.Table{Prices: map[cost.SKU]cost.Price{sku: {USD: 0.14, Source: &cost.Source{Date: "2026-12-01", Name: "test"}}}})
						kept := keptOf(plan.Destroy(priced), lustre)
						require.True(t, kept.Monthly().Known)
						assert.InDelta(t, 0.14*float64(instanceGiB(t, priced)), kept.Monthly().USD, 0.01, "capacity × the price a GiB-month")
					case storage == "lustre":
						assert.Empty(t, d.Protected)
						assert.Empty(t, kept, "nothing stays")
						order := []int{
							stepOf(d, lustre, "storage-lustre"),
							stepOf(d, command, "storage-psa-cleanup"),
							stepOf(d, conn, "storage-psa"),
							stepOf(d, address, "storage-psa"),
							stepOf(d, network, "networks-main"),
						}
						for i := 1; i < len(order); i++ {
							assert.Positive(t, order[i-1])
							assert.Less(t, order[i-1], order[i], "instance, peering cleanup, connection, range, VPC: %v", order)
						}
					case protect:
						assert.Empty(t, d.Protected, "a retained bucket does not stop destroy")
						assert.Equal(t, map[string]string{"storage-bucket " + bucket: "retained on delete (storage.protect)"}, kept)
						assert.Contains(t, d.Stays[0].Remove, "gcloud storage rm --recursive gs://")
						assert.NotNil(t, d.Stays[0].Monthly(), "the kept bucket says what it bills (or that it is unknown)")
					default:
						assert.Empty(t, kept)
						require.Positive(t, stepOf(d, bucket, "storage-bucket"))
						// The provider deletes a bucket that holds objects only with forceDestroy
						// (resource_storage_bucket.go at 6a9e0f0b): without it, destroy stops here
						// after a run.
						force, _ := resourceOf(d, bucket).Input("forceDestroy")
						assert.Equal(t, true, force, "an unprotected bucket is deleted with its objects")
					}
					if storage == "gcsfuse" && protect {
						force, _ := keptOf(d, bucket).Resource.Input("forceDestroy")
						assert.Equal(t, false, force, "a protected bucket keeps forceDestroy off: its objects are never deleted with it")
					}

					var out bytes.Buffer
					require.NoError(t, plan.WriteDestroy(&out, d))
					if len(kept) == 0 {
						assert.Contains(t, out.String(), "Nothing stays.")
					} else {
						assert.Contains(t, out.String(), "Stays in the cloud, billing ")
						assert.Contains(t, out.String(), "    bills: ")
					}
				})
			}
		}
	}
}

func TestCLIDestroy(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--destroy")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "`pulumi destroy` stops before deleting anything while 1 protected resource is in the stack")
	assert.Contains(t, out, "pulumi state unprotect")

	code, out, errOut = plantest.Main(t, "--stack", "b200-spot", "--destroy", "--json")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, `"protected": [`)
}

// Unprotected, b200-spot's peering cleanup is deleted with the rest and runs its delete script;
// the CRDs' command has none and is only deleted.
func TestDestroySaysWhichCommandRunsItsDeleteScript(t *testing.T) {
	code, out, errOut := plantest.Main(t, "--stack", "b200-spot", "--destroy", "--config", "storage.protect=false")
	require.Equal(t, cmd.ExitOK, code, errOut)
	assert.Contains(t, out, "\n    delete command:local:Command storage-psa-cleanup  (runs its delete script)\n")
	assert.Contains(t, out, "\n    delete command:local:Command cluster-crds\n")
}

// A plan without Kubernetes objects says nothing of them.
func TestDestroyWithoutClusterObjectsSaysNothingOfThem(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, plan.WriteDestroy(&out, &plan.DestroyPlan{Stack: "empty"}))
	assert.NotContains(t, out.String(), "with the cluster")
	assert.Contains(t, out.String(), "Nothing stays.")
}

func TestGoldenDestroyPlans(t *testing.T) {
	for _, stack := range plantest.Stacks {
		t.Run(stack, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, plan.WriteDestroy(&out, plan.Destroy(plantest.Plan(t, stack))))
			plantest.Golden(t, stack+".destroy.txt", out.Bytes())
		})
	}
}
