package storage

import (
	_ "embed"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi-command/sdk/go/command/local"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/compute"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/lustre"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/servicenetworking"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"gke-rl/internal/kube"
	"gke-rl/internal/lifecycle"
	"gke-rl/internal/naming"
)

// Lustre ports: an instance with GKE support listens on the legacy port, which the cluster's
// Lustre CSI driver must then use (`enableLegacyLustrePort`); without it, on the standard port.
const (
	LustrePortGKE      = 6988
	LustrePortStandard = 988

	// LustreCSIDriver is the GKE Managed Lustre CSI driver.
	LustreCSIDriver = "lustre.csi.storage.gke.io"
)

// PeeringCleanupScript removes the Private Service Access peering when `pulumi destroy` gets to
// it, after the Lustre instance is gone (see the script for how). It needs gcloud where Pulumi
// runs, as gke-gcloud-auth-plugin does.
//
//go:embed psa-cleanup.sh
var PeeringCleanupScript string

// LustreInstanceID is the instance's ID for a name prefix.
func LustreInstanceID(namePrefix string) string { return naming.New(namePrefix).Name(63, "lustre") }

// InstanceName is the instance's full resource name, which Managed Lustre lists it under and an
// adopted instance is imported by.
func (s LustreSpec) InstanceName() string {
	return fmt.Sprintf("projects/%s/locations/%s/instances/%s", s.Project, s.Zone, LustreInstanceID(s.NamePrefix))
}

// ExportCommand exports a directory of the Lustre file system (a path from the file system's
// root, not the pods' mount path) to Cloud Storage with Managed Lustre's export API
// (`gcloud lustre instances export-data`); the destination ends with a slash.
func ExportCommand(project, zone, instanceID, lustrePath, gcsURI string) string {
	return fmt.Sprintf("gcloud lustre instances export-data %s --location=%s --project=%s --lustre-path=%s --gcs-path-uri=%s",
		instanceID, zone, project, lustrePath, gcsURI)
}

// adopt adds the import of an existing resource to opts when the storage is adopted. The import
// only acts while the resource is not in the stack's state, so the setting may stay on.
func adopt(on bool, opts []pulumi.ResourceOption, id pulumi.StringInput) []pulumi.ResourceOption {
	if !on {
		return opts
	}
	return append(slices.Clone(opts), pulumi.Import(id.ToStringOutput().ApplyT(func(s string) pulumi.ID { return pulumi.ID(s) }).(pulumi.IDOutput)))
}

// LustrePort is the port an instance listens on.
func LustrePort(gkeSupport bool) int {
	if gkeSupport {
		return LustrePortGKE
	}
	return LustrePortStandard
}

// LustreSpec is the instance as the config decides it: plain values.
type LustreSpec struct {
	Project string
	// Zone holds the instance, next to the GPU nodes.
	Zone string
	// NamePrefix starts the GCP names of what the component creates (the cluster name).
	NamePrefix string
	// PSAPrefixLength sizes the Private Service Access range.
	PSAPrefixLength int
	CapacityGiB     int
	// ThroughputMBpsPerTiB is the throughput tier.
	ThroughputMBpsPerTiB int
	Filesystem           string
	// GKESupport makes the instance listen on LustrePortGKE.
	GKESupport bool
	// Protect keeps the instance through `pulumi destroy`: destroy refuses to start.
	Protect bool
	// Adopt takes over the existing instance of the same name and its PSA range and connection
	// (kept by `pulumi destroy --exclude-protected`) instead of creating them.
	Adopt bool
}

// LustreArgs are the spec and what it attaches to, known once that exists.
type LustreArgs struct {
	LustreSpec
	// Network is the main VPC's ID (`projects/<p>/global/networks/<n>`): the instance and the
	// PSA peering live there.
	Network pulumi.StringInput
	// NodeServiceAccount is the email of the nodes' service account: the firewall admits Lustre
	// traffic to those nodes only.
	NodeServiceAccount pulumi.StringInput
	// Placement is where the PV and the claim go.
	Placement kube.Placement
}

// Lustre is a Managed Lustre instance reached over Private Service Access, with a claim on it.
type Lustre struct {
	pulumi.ResourceState

	PSARange *compute.GlobalAddress
	Peering  *servicenetworking.Connection
	// PeeringCleanup deletes the Private Service Access peering on `pulumi destroy`.
	PeeringCleanup *local.Command
	Instance       *lustre.Instance
	Firewall       *compute.Firewall
	PV             *corev1.PersistentVolume
	Claim          *corev1.PersistentVolumeClaim
}

// LustreVolume is how pods mount a Lustre claim: any service account will do.
func LustreVolume(mountPath string) kube.SharedVolume {
	return kube.SharedVolume{ClaimName: ClaimName, MountPath: mountPath}
}

// NewLustre registers the instance. It waits only for the peering connection (and so the VPC),
// never for the cluster: at tens of minutes it is the slowest resource, and starts first.
func NewLustre(ctx *pulumi.Context, name string, args *LustreArgs, opts ...pulumi.ResourceOption) (*Lustre, error) {
	l := &Lustre{}
	if err := ctx.RegisterComponentResource("gke-rl:storage:Lustre", name, l, opts...); err != nil {
		return nil, err
	}
	names := naming.New(args.NamePrefix)
	kids := naming.Children{Component: name, Parent: l}
	project := pulumi.String(args.Project)
	var err error

	psaName, psaOpts := kids.Of("psa", "psa")
	rangeName := names.Resource("psa")
	l.PSARange, err = compute.NewGlobalAddress(ctx, psaName, &compute.GlobalAddressArgs{
		Project:      project,
		Name:         pulumi.String(rangeName),
		Purpose:      pulumi.String("VPC_PEERING"),
		AddressType:  pulumi.String("INTERNAL"),
		PrefixLength: pulumi.Int(args.PSAPrefixLength),
		Network:      args.Network,
		Description:  pulumi.String("Private Service Access range for Managed Lustre"),
	}, adopt(args.Adopt, psaOpts, pulumi.String(fmt.Sprintf("projects/%s/global/addresses/%s", args.Project, rangeName)))...)
	if err != nil {
		return nil, fmt.Errorf("psa range: %w", err)
	}
	l.Peering, err = servicenetworking.NewConnection(ctx, psaName, &servicenetworking.ConnectionArgs{
		Network:               args.Network,
		Service:               pulumi.String("servicenetworking.googleapis.com"),
		ReservedPeeringRanges: pulumi.StringArray{l.PSARange.Name},
		// Deleting the connection fails while the producer still holds the range, which it does
		// for a while after the instance is gone ("Producer services ... are still using this
		// connection", terraform-provider-google #16275, #18834, #19908). ABANDON (the only
		// value the pinned provider's deletion_policy accepts) leaves it to the cleanup below.
		DeletionPolicy: pulumi.String("ABANDON"),
	}, adopt(args.Adopt, psaOpts, args.Network.ToStringOutput().ApplyT(func(network string) string {
		// The provider's import ID: the network and the service, each query-escaped
		// (services/servicenetworking/resource_service_networking_connection.go).
		return url.QueryEscape(network) + ":" + url.QueryEscape("servicenetworking.googleapis.com")
	}).(pulumi.StringOutput))...)
	if err != nil {
		return nil, fmt.Errorf("psa connection: %w", err)
	}
	// The cleanup is created after the connection and deleted after the instance (which waits
	// for it), before the range and the network: a peering left behind blocks deleting the VPC.
	cleanupName, cleanupOpts := kids.Of("psa-cleanup", "", pulumi.DependsOn([]pulumi.Resource{l.Peering}))
	l.PeeringCleanup, err = local.NewCommand(ctx, cleanupName, &local.CommandArgs{
		Delete:      pulumi.String(PeeringCleanupScript),
		Interpreter: pulumi.StringArray{pulumi.String("/bin/bash"), pulumi.String("-c")},
		// The script never reads the create step's output (there is none).
		AddPreviousOutputInEnv: pulumi.Bool(false),
		Environment: pulumi.StringMap{
			"PROJECT": project,
			"NETWORK": args.Network.ToStringOutput().ApplyT(path.Base).(pulumi.StringOutput),
		},
	}, cleanupOpts...)
	if err != nil {
		return nil, fmt.Errorf("psa cleanup: %w", err)
	}

	lustreName, lustreOpts := kids.Of("lustre", "lustre")
	instanceID := LustreInstanceID(args.NamePrefix)
	instanceOpts := adopt(args.Adopt, lustreOpts, pulumi.String(args.InstanceName()))
	l.Instance, err = lustre.NewInstance(ctx, lustreName, &lustre.InstanceArgs{
		Project:                  project,
		InstanceId:               pulumi.String(instanceID),
		Location:                 pulumi.String(args.Zone),
		CapacityGib:              pulumi.String(strconv.Itoa(args.CapacityGiB)),
		PerUnitStorageThroughput: pulumi.String(strconv.Itoa(args.ThroughputMBpsPerTiB)),
		Filesystem:               pulumi.String(args.Filesystem),
		Network:                  args.Network,
		GkeSupportEnabled:        pulumi.Bool(args.GKESupport),
		Description:              pulumi.String("Data, models and checkpoints of " + args.NamePrefix),
	}, slices.Concat(instanceOpts, []pulumi.ResourceOption{
		// No data flows from the peering to the instance, but the instance needs it; and the
		// cleanup of the peering must wait for the instance to be gone.
		pulumi.DependsOn([]pulumi.Resource{l.Peering, l.PeeringCleanup}),
		pulumi.Protect(args.Protect),
	}, lifecycle.Options(lifecycle.LustreType))...)
	if err != nil {
		return nil, fmt.Errorf("lustre instance: %w", err)
	}

	psaCIDR := pulumi.Sprintf("%s/%d", l.PSARange.Address, args.PSAPrefixLength)
	l.Firewall, err = compute.NewFirewall(ctx, lustreName, &compute.FirewallArgs{
		Project:     project,
		Name:        pulumi.String(names.Resource("allow-lustre")),
		Network:     args.Network,
		Direction:   pulumi.String("INGRESS"),
		Description: pulumi.String("Managed Lustre traffic from the Private Service Access range to the GKE nodes"),
		Allows: compute.FirewallAllowArray{compute.FirewallAllowArgs{
			Protocol: pulumi.String("tcp"),
			Ports:    pulumi.StringArray{pulumi.String(strconv.Itoa(LustrePort(args.GKESupport)))},
		}},
		SourceRanges:          pulumi.StringArray{psaCIDR},
		TargetServiceAccounts: pulumi.StringArray{args.NodeServiceAccount},
	}, lustreOpts...)
	if err != nil {
		return nil, fmt.Errorf("lustre firewall: %w", err)
	}

	ip := l.Instance.MountPoint.ApplyT(MountPointIP).(pulumi.StringOutput)
	l.PV, l.Claim, err = newClaim(ctx, kids, "lustre", claimArgs{
		Capacity: fmt.Sprintf("%dGi", args.CapacityGiB),
		Reclaim:  "Retain",
		Source: corev1.CSIPersistentVolumeSourceArgs{
			Driver:       pulumi.String(LustreCSIDriver),
			VolumeHandle: pulumi.Sprintf("%s/%s/%s", l.Instance.Project, l.Instance.Location, l.Instance.InstanceId),
			VolumeAttributes: pulumi.StringMap{
				"ip":         ip,
				"filesystem": l.Instance.Filesystem,
			},
		},
	}, args.Placement)
	if err != nil {
		return nil, fmt.Errorf("lustre claim: %w", err)
	}

	if err := ctx.RegisterResourceOutputs(l, pulumi.Map{
		"instance":   l.Instance.Name,
		"mountPoint": l.Instance.MountPoint,
		"claim":      pulumi.String(ClaimName),
	}); err != nil {
		return nil, err
	}
	return l, nil
}

// Ready implements Shared: pods wait for the claim.
func (l *Lustre) Ready() []pulumi.Resource { return []pulumi.Resource{l.Claim} }

// MountPointIP is the server address in a Lustre mount point such as `10.90.1.4@tcp:/lustrefs`,
// which the CSI driver takes as the volume's `ip` attribute.
func MountPointIP(mountPoint string) (string, error) {
	nid, _, ok := strings.Cut(mountPoint, ":/")
	ip, proto, hasProto := strings.Cut(nid, "@")
	if !ok || !hasProto || ip == "" || !strings.HasPrefix(proto, "tcp") {
		return "", fmt.Errorf("lustre mount point %q is not of the form <ip>@tcp:/<filesystem>", mountPoint)
	}
	return ip, nil
}
