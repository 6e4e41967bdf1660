package ray_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/common"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"gke-rl/internal/gpunode"
	"gke-rl/internal/kube"
	"gke-rl/ray"
	"gke-rl/test/clitest"
	_ "gke-rl/test/golden" // every test binary accepts -update
)

// fixture is a B200 Standard cluster on Lustre; each case changes one thing of a copy.
func fixture() ray.SpecArgs {
	return ray.SpecArgs{
		Image:      "nvcr.io/nvidia/nemo-rl:v0.5.0",
		RayVersion: "2.49.2",
		Workers:    8,
		GPU: ray.GPU{
			Accelerator: "nvidia-b200", GPUsPerNode: 8, CPUs: 208, MemoryGiB: 3600, SharedMemoryGiB: 240,
			NCCLTunerConfig: "/usr/local/gib/configs/tuner_config_a4.txtpb",
		},
		WorkerNodeSelector: map[string]string{"cloud.google.com/gke-nodepool": "x-gpu"},
		HeadNodeSelector:   map[string]string{"cloud.google.com/gke-nodepool": "x-cpu"},
		NICs:               gpunode.NICs(8),
		Storage:            kube.SharedVolume{ClaimName: "rl-shared", MountPath: "/lustre"},
		Env:                []corev1.EnvVar{{Name: "HF_HOME", Value: "/lustre/huggingface"}},
	}
}

func env(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func TestClusterSpecs(t *testing.T) {
	cases := []struct {
		sentence string
		change   func(*ray.SpecArgs)
		check    func(t *testing.T, a ray.SpecArgs)
	}{
		{"the head stays off GPU and spot nodes", nil, func(t *testing.T, a ray.SpecArgs) {
			head := ray.HeadTemplate(a)
			assert.Empty(t, head.Spec.Tolerations, "no GPU toleration: the GPU taint keeps the head away")
			assert.Equal(t, a.HeadNodeSelector, head.Spec.NodeSelector)
			assert.NotContains(t, head.Spec.NodeSelector, "cloud.google.com/gke-spot")
			_, gpu := head.Spec.Containers[0].Resources.Limits[gpunode.GPUResource]
			assert.False(t, gpu)
			spec := ray.ClusterSpec(a)
			assert.Equal(t, corev1.ServiceTypeClusterIP, spec.HeadGroupSpec.ServiceType, "the dashboard is not exposed outside the cluster")
			assert.Equal(t, "0", spec.HeadGroupSpec.RayStartParams["num-cpus"])
		}},
		{"the worker group is fixed at gpu.nodes", func(a *ray.SpecArgs) { a.Workers = 3 }, func(t *testing.T, a ray.SpecArgs) {
			g := ray.ClusterSpec(a).WorkerGroupSpecs[0]
			assert.EqualValues(t, 3, *g.Replicas)
			assert.EqualValues(t, 3, *g.MinReplicas)
			assert.EqualValues(t, 3, *g.MaxReplicas)
			assert.False(t, *ray.ClusterSpec(a).EnableInTreeAutoscaling)
		}},
		{"a worker takes all GPUs and the catalog's CPU and memory", nil, func(t *testing.T, a ray.SpecArgs) {
			c := ray.WorkerTemplate(a).Spec.Containers[0]
			lim := c.Resources.Limits
			assert.Equal(t, "8", lim.Name(gpunode.GPUResource, "").String())
			assert.Equal(t, "208", lim.Cpu().String())
			assert.Equal(t, "3600Gi", lim.Memory().String())
			assert.Equal(t, c.Resources.Limits, c.Resources.Requests)
		}},
		{"a worker tolerates the GPU taint and sits on the GPU pool", nil, func(t *testing.T, a ray.SpecArgs) {
			spec := ray.WorkerTemplate(a).Spec
			assert.Equal(t, []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, spec.Tolerations)
			assert.Equal(t, a.WorkerNodeSelector, spec.NodeSelector)
		}},
		{"an Autopilot worker carries the Autopilot selectors", func(a *ray.SpecArgs) {
			a.WorkerNodeSelector = map[string]string{"cloud.google.com/gke-accelerator": "nvidia-b200", "cloud.google.com/gke-accelerator-count": "8", "cloud.google.com/compute-class": "Performance", "cloud.google.com/gke-spot": "true"}
			a.HeadNodeSelector = nil
		}, func(t *testing.T, a ray.SpecArgs) {
			assert.Equal(t, "8", ray.WorkerTemplate(a).Spec.NodeSelector["cloud.google.com/gke-accelerator-count"], "a string, as Autopilot requires")
			assert.Nil(t, ray.HeadTemplate(a).Spec.NodeSelector)
		}},
		{"a worker's interfaces follow the network objects in NIC order", nil, func(t *testing.T, a ray.SpecArgs) {
			ann := ray.WorkerTemplate(a).Annotations
			assert.Equal(t, "eth0", ann[gpunode.DefaultInterfaceAnnotation])
			var got []gpunode.Interface
			require.NoError(t, json.Unmarshal([]byte(ann[gpunode.InterfacesAnnotation]), &got))
			require.Len(t, got, 10)
			assert.Equal(t, gpunode.Interface{InterfaceName: "eth0", Network: "default"}, got[0])
			for i, n := range a.NICs {
				assert.Equal(t, n.Name, got[i+1].Network)
				assert.Equal(t, "eth"+string(rune('1'+i)), got[i+1].InterfaceName)
			}
		}},
		{"the B200 tuner file reaches the worker", nil, func(t *testing.T, a ray.SpecArgs) {
			e := env(ray.WorkerTemplate(a).Spec.Containers[0])
			assert.Equal(t, "/usr/local/gib/configs/tuner_config_a4.txtpb", e["NCCL_TUNER_CONFIG_PATH"])
			assert.Equal(t, "/usr/local/nvidia/lib64:/usr/local/gib/lib64", e["LD_LIBRARY_PATH"])
			assert.Equal(t, "eth0", e["NCCL_SOCKET_IFNAME"])
			assert.Equal(t, "eth0", e["GLOO_SOCKET_IFNAME"])
			assert.Equal(t, "/lustre/huggingface", e["HF_HOME"])
		}},
		{"a worker mounts the shared claim, shm in memory and the host libraries", nil, func(t *testing.T, a ray.SpecArgs) {
			spec := ray.WorkerTemplate(a).Spec
			mounts := map[string]string{}
			for _, m := range spec.Containers[0].VolumeMounts {
				mounts[m.Name] = m.MountPath
			}
			assert.Equal(t, map[string]string{"shared": "/lustre", "dshm": "/dev/shm", "nvidia": "/usr/local/nvidia", "gib": "/usr/local/gib"}, mounts)
			vols := map[string]corev1.Volume{}
			for _, v := range spec.Volumes {
				vols[v.Name] = v
			}
			assert.Equal(t, "rl-shared", vols["shared"].PersistentVolumeClaim.ClaimName)
			assert.Equal(t, corev1.StorageMediumMemory, vols["dshm"].EmptyDir.Medium)
			assert.Equal(t, "240Gi", vols["dshm"].EmptyDir.SizeLimit.String())
			assert.Equal(t, "/home/kubernetes/bin/nvidia", vols["nvidia"].HostPath.Path)
			assert.Equal(t, "/home/kubernetes/bin/gib", vols["gib"].HostPath.Path)
			assert.Equal(t, corev1.HostPathDirectory, *vols["gib"].HostPath.Type, "no worker starts before the installer has run")
		}},
		{"GCS FUSE storage adds its annotation and service account to every pod", func(a *ray.SpecArgs) {
			a.Storage = kube.SharedVolume{ClaimName: "rl-shared", MountPath: "/data", ServiceAccountName: "rl-storage", PodAnnotations: map[string]string{"gke-gcsfuse/volumes": "true"}}
		}, func(t *testing.T, a ray.SpecArgs) {
			for _, pod := range []corev1.PodTemplateSpec{ray.HeadTemplate(a), ray.WorkerTemplate(a)} {
				assert.Equal(t, "rl-storage", pod.Spec.ServiceAccountName)
				assert.Equal(t, "true", pod.Annotations["gke-gcsfuse/volumes"])
			}
			assert.Len(t, a.Storage.PodAnnotations, 1, "the builder does not modify its input")
		}},
		{"Lustre storage needs no service account or annotation", nil, func(t *testing.T, a ray.SpecArgs) {
			head := ray.HeadTemplate(a)
			assert.Empty(t, head.Spec.ServiceAccountName)
			assert.Empty(t, head.Annotations)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.sentence, func(t *testing.T) {
			a := fixture()
			if tc.change != nil {
				tc.change(&a)
			}
			tc.check(t, a)
			require.NoError(t, ray.ValidateCluster(ray.RayClusterObject("ray-a4", "gke-rl", ray.ClusterSpec(a))), "KubeRay accepts it")
		})
	}
}

func TestSpecsAreDeterministic(t *testing.T) {
	a, _ := json.Marshal(ray.ClusterSpec(fixture()))
	b, _ := json.Marshal(ray.ClusterSpec(fixture()))
	assert.Equal(t, string(a), string(b))
}

func TestKubeRayValidationRejects(t *testing.T) {
	long := ray.RayClusterObject(strings.Repeat("a", 54), "gke-rl", ray.ClusterSpec(fixture()))
	assert.ErrorContains(t, ray.ValidateCluster(long), "no more than 53 characters")

	spec := ray.ClusterSpec(fixture())
	spec.WorkerGroupSpecs[0].RayStartParams = map[string]string{"num-gpus": "8"}
	spec.WorkerGroupSpecs[0].Resources = map[string]string{"GPU": "8"}
	assert.ErrorContains(t, ray.ValidateCluster(ray.RayClusterObject("ray-a4", "gke-rl", spec)), "should not be set in both")
}

func TestValidateJobRunsKubeRaysRayJobChecks(t *testing.T) {
	job := &rayv1.RayJob{ObjectMeta: metav1.ObjectMeta{Name: "x-grpo"}, Spec: rayv1.RayJobSpec{Entrypoint: "true"}}
	assert.ErrorContains(t, ray.ValidateJob(job), "one of RayClusterSpec or ClusterSelector must be set")
	job.Spec.ClusterSelector = map[string]string{"ray.io/cluster": "x"}
	assert.NoError(t, ray.ValidateJob(job))
	job.Name = "X_grpo"
	assert.ErrorContains(t, ray.ValidateJob(job), "DNS1035")
}

func TestPortForward(t *testing.T) {
	assert.Equal(t, "kubectl -n gke-rl port-forward service/verl-h200-head-svc 8265:8265", ray.PortForward("gke-rl", "verl-h200"))
}

// The worker's command as KubeRay v1.5.0 composes it (its own BuildPod), run with bash: Ray starts
// with the gIB plugin's NCCL settings, and does not start at all when they cannot be loaded,
// instead of training over TCP.
func TestWorkerStartsRayOnlyWithTheNCCLEnvironment(t *testing.T) {
	bash := clitest.Tool(t, "bash")
	dir := t.TempDir()
	script := filepath.Join(dir, "set_nccl_env.sh")
	a := fixture()
	template := ray.WorkerTemplate(a)
	template.Spec.Containers[0].Command = ray.SourceOrExit(script)
	pod := common.BuildPod(context.Background(), template, rayv1.WorkerNode, map[string]string{}, "6379", false, utils.RayClusterCRD, "head.gke-rl.svc", nil)
	composed := pod.Spec.Containers[0].Args[0]
	require.Contains(t, composed, "ray start", "KubeRay appended its start")

	// A `ray` that says what it was started with.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ray"), []byte("#!/bin/sh\necho \"ray started with NCCL_NET=$NCCL_NET\"\n"), 0o755))
	run := func() clitest.Result {
		return clitest.Run(t, []string{"PATH=" + dir + ":" + os.Getenv("PATH")}, bash, "-c", composed)
	}

	require.NoError(t, os.WriteFile(script, []byte("export NCCL_NET=gIB\n"), 0o644))
	res := run()
	assert.Equal(t, 0, res.Code, res.Stderr)
	assert.Equal(t, "ray started with NCCL_NET=gIB\n", res.Stdout)

	require.NoError(t, os.Remove(script))
	res = run()
	assert.Equal(t, 1, res.Code)
	assert.Empty(t, res.Stdout, "Ray does not start")
	assert.Contains(t, res.Stderr, "set_nccl_env.sh did not load: not starting Ray without the NCCL RDMA settings")
}

// Workers read the host's driver and gIB plugin; they cannot replace them for the next pod.
func TestWorkerMountsTheHostLibrariesReadOnly(t *testing.T) {
	for _, m := range ray.WorkerTemplate(fixture()).Spec.Containers[0].VolumeMounts {
		switch m.MountPath {
		case gpunode.NvidiaPath, gpunode.GIBPath:
			assert.True(t, m.ReadOnly, m.MountPath)
		case "/dev/shm", "/lustre":
			assert.False(t, m.ReadOnly, m.MountPath)
		}
	}
}
