package preflight

import (
	"context"
	"net/http"

	cloudbilling "google.golang.org/api/cloudbilling/v1"
	crm "google.golang.org/api/cloudresourcemanager/v1"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
	serviceusage "google.golang.org/api/serviceusage/v1"
	htransport "google.golang.org/api/transport/http"
)

// Clients are the Google API clients the checks read with: every call is a get, a list or
// testIamPermissions, none changes anything.
type Clients struct {
	ResourceManager *crm.Service
	ServiceUsage    *serviceusage.Service
	Compute         *compute.Service
	// Billing reads the Cloud Billing Catalog (list prices), for --prices-out only.
	Billing *cloudbilling.APIService
	// HTTP is the same credentials' client, for Managed Lustre, which has no Go client here.
	HTTP *http.Client
	// Hub reads the Hugging Face Hub with a client of its own; nil skips the Hub's checks.
	Hub *Hub

	// machineTypes are the machine types read so far, by zone and name.
	machineTypes map[string]*compute.MachineType
}

// machineType reads a machine type of a zone once per run: the machine type check and the
// prices step both need the CPU pool's.
func (c *Clients) machineType(ctx context.Context, project, zone, name string) (*compute.MachineType, error) {
	key := zone + "/" + name
	if mt, ok := c.machineTypes[key]; ok {
		return mt, nil
	}
	mt, err := c.Compute.MachineTypes.Get(project, zone, name).Context(ctx).Do()
	if err != nil {
		return nil, err
	}
	if c.machineTypes == nil {
		c.machineTypes = map[string]*compute.MachineType{}
	}
	c.machineTypes[key] = mt
	return mt, nil
}

// NewClients builds the clients. Main gives them the caller's Application Default Credentials
// (`gcloud auth application-default login`) and bills the calls' quota to the stack's project,
// as Cluster Toolkit's validators do (pkg/validators/cloud.go); tests give them an HTTP client
// that reaches a fake.
func NewClients(ctx context.Context, opts ...option.ClientOption) (*Clients, error) {
	rm, err := crm.NewService(ctx, opts...)
	if err != nil {
		return nil, err
	}
	su, err := serviceusage.NewService(ctx, opts...)
	if err != nil {
		return nil, err
	}
	ce, err := compute.NewService(ctx, opts...)
	if err != nil {
		return nil, err
	}
	cb, err := cloudbilling.NewService(ctx, opts...)
	if err != nil {
		return nil, err
	}
	hc, _, err := htransport.NewClient(ctx, append(opts, option.WithScopes("https://www.googleapis.com/auth/cloud-platform"))...)
	if err != nil {
		return nil, err
	}
	return &Clients{ResourceManager: rm, ServiceUsage: su, Compute: ce, Billing: cb, HTTP: hc}, nil
}
