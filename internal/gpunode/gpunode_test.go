package gpunode_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"gke-rl/internal/gpunode"
	_ "gke-rl/test/golden" // every test binary accepts -update
)

func TestNICOrderIsGVNICThenRDMA(t *testing.T) {
	nics := gpunode.NICs(8)
	require.Len(t, nics, 9)
	assert.Equal(t, gpunode.NIC{Name: "gvnic-1", Kind: gpunode.GVNIC}, nics[0])
	for i, n := range nics[1:] {
		assert.Equal(t, gpunode.RDMA, n.Kind)
		assert.Equal(t, i, n.Subnet)
		assert.Equal(t, "rdma-"+string(rune('0'+i)), n.Name)
	}
}

func TestInterfaceAnnotationsAttachEveryNICInOrder(t *testing.T) {
	nics := gpunode.NICs(2)
	ann := gpunode.InterfaceAnnotations(nics)
	assert.Equal(t, "eth0", ann[gpunode.DefaultInterfaceAnnotation])
	var got []gpunode.Interface
	require.NoError(t, json.Unmarshal([]byte(ann[gpunode.InterfacesAnnotation]), &got))
	assert.Equal(t, []gpunode.Interface{
		{InterfaceName: "eth0", Network: "default"},
		{InterfaceName: "eth1", Network: "gvnic-1"},
		{InterfaceName: "eth2", Network: "rdma-0"},
		{InterfaceName: "eth3", Network: "rdma-1"},
	}, got)
}

func TestGPUContainersMountWhatTheNodeOffers(t *testing.T) {
	vols := map[string]corev1.Volume{}
	for _, v := range gpunode.Volumes(250) {
		vols[v.Name] = v
	}
	mounts := map[string]string{}
	for _, m := range gpunode.VolumeMounts() {
		mounts[m.Name] = m.MountPath
		assert.Contains(t, vols, m.Name, "every mount has its volume")
	}
	assert.Len(t, mounts, len(vols), "every volume is mounted")
	assert.Equal(t, "/usr/local/gib", mounts["gib"])
	assert.Equal(t, gpunode.GIBHostPath, vols["gib"].HostPath.Path)
	assert.Equal(t, corev1.HostPathDirectory, *vols["gib"].HostPath.Type, "nothing starts before the RDMA installer has run")
	assert.Equal(t, corev1.HostPathDirectory, *vols["nvidia"].HostPath.Type)
	assert.Equal(t, "250Gi", vols["dshm"].EmptyDir.SizeLimit.String())
	assert.Equal(t, corev1.StorageMediumMemory, vols["dshm"].EmptyDir.Medium)
}
