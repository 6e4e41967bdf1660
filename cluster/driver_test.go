package cluster

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gpuDrivers is testdata/recorded/gke-gpu-drivers.json.
type gpuDrivers struct {
	COS []struct {
		GKE             string `json:"gke"`
		Default, Latest int
	} `json:"cos"`
	CUDAMajorMinimumBranch map[string]int `json:"cudaMajorMinimumBranch"`
}

func readGPUDrivers(t *testing.T) gpuDrivers {
	t.Helper()
	raw, err := os.ReadFile("../testdata/recorded/gke-gpu-drivers.json")
	require.NoError(t, err)
	var d gpuDrivers
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotEmpty(t, d.COS)
	return d
}

// The branches the program reasons with are the recorded ones, at every GKE minor recorded: the
// lowest DEFAULT (what a run may count on without asking for more) and the lowest LATEST.
func TestTheDriverBranchesAreTheRecordedOnes(t *testing.T) {
	d := readGPUDrivers(t)
	lowestDefault, lowestLatest := d.COS[0].Default, d.COS[0].Latest
	for _, v := range d.COS {
		assert.GreaterOrEqual(t, v.Latest, v.Default, "GKE %s: LATEST is never older than DEFAULT", v.GKE)
		lowestDefault, lowestLatest = min(lowestDefault, v.Default), min(lowestLatest, v.Latest)
	}
	assert.Equal(t, lowestDefault, DefaultDriverBranch)
	assert.Equal(t, lowestLatest, LatestDriverBranch)
	// CUDA 13 is what separates the two: DEFAULT runs none of it, LATEST all of it.
	assert.Less(t, DefaultDriverBranch, d.CUDAMajorMinimumBranch["13"])
	assert.GreaterOrEqual(t, LatestDriverBranch, d.CUDAMajorMinimumBranch["13"])
	assert.GreaterOrEqual(t, DefaultDriverBranch, d.CUDAMajorMinimumBranch["12"])
}

func TestTheDriverVersionIsTheAPIsOwnWord(t *testing.T) {
	assert.Equal(t, "DEFAULT", driverVersionAPI(DriverDefault))
	assert.Equal(t, "LATEST", driverVersionAPI(DriverLatest))
	assert.Equal(t, "DEFAULT", driverVersionAPI(""), "a spec that does not say takes GKE's DEFAULT, as before the key")
}
