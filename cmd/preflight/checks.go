package preflight

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	crm "google.golang.org/api/cloudresourcemanager/v1"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"gke-rl/cmd"
	"gke-rl/internal/kinds"
	"gke-rl/internal/offers"
)

// The checks, in the order they run.
const (
	CheckProject     = "project"
	CheckAPIs        = "apis"
	CheckMachineType = "machine type"
	CheckQuota       = "gpu quota"
	// The other quotas `up` draws on (quotas.go).
	CheckGlobalGPUs  = "global gpus"
	CheckCPUQuota    = "cpu quota"
	CheckSSDQuota    = "ssd quota"
	CheckLocalSSD    = "local ssd"
	CheckReservation = "reservation"
	// CheckLustre (lustre.go) runs here, after the reservation.
	CheckPermissions = "permissions"
)

// Run asks the project every question, read-only, and returns one finding per check. A project
// that cannot be read skips the rest; a disabled Compute Engine API skips the Compute checks. The
// error says that Google's APIs could not be asked at all (no credentials, no network): the
// first call got no answer from an API.
func Run(ctx context.Context, c *Clients, n Needs) ([]cmd.Finding, error) {
	project, err := checkProject(ctx, c, n)
	if err != nil {
		return nil, err
	}
	if project.Status != cmd.OK {
		findings := []cmd.Finding{project}
		for _, name := range slices.Concat([]string{CheckAPIs, CheckMachineType}, quotaChecks, []string{CheckReservation, CheckLustre, CheckPermissions}) {
			findings = append(findings, cmd.Finding{Name: name, Status: cmd.Skipped, Detail: "the project could not be read"})
		}
		return findings, nil
	}
	apis, disabled := checkAPIs(ctx, c, n)
	findings := []cmd.Finding{project, apis}
	if slices.Contains(disabled, "compute.googleapis.com") {
		for _, name := range slices.Concat([]string{CheckMachineType}, quotaChecks, []string{CheckReservation}) {
			findings = append(findings, cmd.Finding{Name: name, Status: cmd.Skipped, Detail: "the Compute Engine API is not enabled"})
		}
	} else {
		findings = append(findings, checkMachineType(ctx, c, n))
		findings = append(findings, checkQuotas(ctx, c, n)...)
		findings = append(findings, checkReservation(ctx, c, n))
	}
	if slices.Contains(disabled, "lustre.googleapis.com") {
		findings = append(findings, cmd.Finding{Name: CheckLustre, Status: cmd.Skipped, Detail: "the Managed Lustre API is not enabled"})
	} else {
		findings = append(findings, checkLustre(ctx, c, n))
	}
	findings = append(findings, checkPermissions(ctx, c, n))
	if c.Hub != nil {
		findings = append(findings, checkHub(ctx, c.Hub, n)...)
	}
	return findings, nil
}

// Passed is whether no check failed.
func Passed(findings []cmd.Finding) bool {
	return !slices.ContainsFunc(findings, func(f cmd.Finding) bool { return f.Status == cmd.Failed })
}

func checkProject(ctx context.Context, c *Clients, n Needs) (cmd.Finding, error) {
	f := cmd.Finding{Name: CheckProject}
	p, err := c.ResourceManager.Projects.Get(n.Project).Context(ctx).Do()
	var gerr *googleapi.Error
	switch {
	case err != nil && !errors.As(err, &gerr):
		return f, err
	case err != nil:
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("%s cannot be read with your credentials: %s", n.Project, apiMessage(err))
		f.Fix = fmt.Sprintf("check the project ID (gcp:project) and your access: `gcloud projects describe %s`; preflight reads with Application Default Credentials: `gcloud auth application-default login`", n.Project)
	case p.LifecycleState != "ACTIVE":
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("%s is %s, not ACTIVE", n.Project, p.LifecycleState)
		f.Fix = fmt.Sprintf("a project pending deletion can be restored within 30 days: `gcloud projects undelete %s`", n.Project)
	default:
		f.Status, f.Detail = cmd.OK, fmt.Sprintf("%s (number %d) is ACTIVE", n.Project, p.ProjectNumber)
	}
	return f, nil
}

// checkAPIs returns the finding and the services that are not enabled.
func checkAPIs(ctx context.Context, c *Clients, n Needs) (cmd.Finding, []string) {
	f := cmd.Finding{Name: CheckAPIs}
	parent := "projects/" + n.Project
	names := make([]string, len(n.APIs))
	for i, api := range n.APIs {
		names[i] = parent + "/services/" + api
	}
	resp, err := c.ServiceUsage.Services.BatchGet(parent).Names(names...).Context(ctx).Do()
	if err != nil {
		f.Status, f.Detail = cmd.Failed, "the enabled services cannot be read: "+apiMessage(err)
		f.Fix = grantFix(n.Project, "serviceusage.services.get", "roles/serviceusage.serviceUsageViewer")
		return f, nil
	}
	enabled := map[string]bool{}
	for _, s := range resp.Services {
		if s.State == "ENABLED" && s.Config != nil {
			enabled[s.Config.Name] = true
		}
	}
	disabled := notIn(n.APIs, enabled)
	if len(disabled) > 0 {
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("%d of the %d services up uses are not enabled: %s", len(disabled), len(n.APIs), strings.Join(disabled, ", "))
		f.Fix = fmt.Sprintf("`gcloud services enable %s --project %s`", strings.Join(disabled, " "), n.Project)
		return f, disabled
	}
	f.Status, f.Detail = cmd.OK, fmt.Sprintf("the %d services up uses are enabled", len(n.APIs))
	return f, nil
}

// checkMachineType asks the zone for the GPU nodes' machine type and, in Standard mode, the CPU
// pool's (cluster.cpuMachineType, which a user may have mistyped: the pool would fail only after
// the cluster's 10 to 25 minutes).
func checkMachineType(ctx context.Context, c *Clients, n Needs) cmd.Finding {
	f := cmd.Finding{Name: CheckMachineType}
	var offered []string
	for _, m := range []struct{ name, role, key string }{{n.MachineType, "the GPU nodes", "gpu.type"}, {n.CPUMachineType, "the CPU pool", "cluster.cpuMachineType"}} {
		if m.name == "" {
			continue
		}
		mt, err := c.machineType(ctx, n.Project, n.Zone, m.name)
		switch {
		case isNotFound(err):
			f.Status, f.Detail = cmd.Failed, fmt.Sprintf("%s does not offer %s (%s, %s) to %s", n.Zone, m.name, m.role, m.key, n.Project)
			f.Fix = fmt.Sprintf("`gcloud compute machine-types list --filter=name=%s --project %s --format='value(zone)'` lists the zones that do", m.name, n.Project)
			if o, ok := offers.Lookup(m.name); ok {
				f.Fix += fmt.Sprintf(" (in %s: %s)", offers.ZonesRecorded, strings.Join(o.Zones, ", "))
			}
			return f
		case err != nil:
			f.Status, f.Detail = cmd.Failed, fmt.Sprintf("%s in %s cannot be read: %s", m.name, n.Zone, apiMessage(err))
			f.Fix = grantFix(n.Project, "compute.machineTypes.get", "roles/compute.viewer")
			return f
		}
		offered = append(offered, fmt.Sprintf("%s for %s (%d vCPUs, %d GiB, %s)", mt.Name, m.role, mt.GuestCpus, mt.MemoryMb/1024, accelerators(mt.Accelerators)))
	}
	f.Status, f.Detail = cmd.OK, fmt.Sprintf("%s offers %s", n.Zone, strings.Join(offered, " and "))
	return f
}

func checkReservation(ctx context.Context, c *Clients, n Needs) cmd.Finding {
	f := cmd.Finding{Name: CheckReservation}
	if n.Provisioning != kinds.Reservation {
		f.Status, f.Detail = cmd.Skipped, fmt.Sprintf("gpu.provisioning is %s", n.Provisioning)
		return f
	}
	// A shared reservation is read in the project that owns it: the consumer project cannot list
	// it, and compute.reservations.get is asked of the owner.
	owner := cmp.Or(n.ReservationProject, n.Project)
	listFix := fmt.Sprintf("`gcloud compute reservations list --project %s --filter=name=%s` shows where it is; gpu.reservation and zone must name it and its zone", owner, n.Reservation)
	if owner != n.Project {
		listFix += fmt.Sprintf("; a reservation of another project must be shared with %s (`gcloud compute reservations describe %s --zone %s --project %s` shows its shareSettings)", n.Project, n.Reservation, n.Zone, owner)
	}
	r, err := c.Compute.Reservations.Get(owner, n.Zone, n.Reservation).Context(ctx).Do()
	switch {
	case isNotFound(err):
		f.Status, f.Detail, f.Fix = cmd.Failed, fmt.Sprintf("%s has no reservation %q in %s", owner, n.Reservation, n.Zone), listFix
		return f
	case err != nil:
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("reservation %q of %s in %s cannot be read: %s", n.Reservation, owner, n.Zone, apiMessage(err))
		f.Fix = grantFix(owner, "compute.reservations.get", "roles/compute.viewer")
		return f
	}
	var problems []string
	var machine string
	var count, inUse int64
	if s := r.SpecificReservation; s != nil {
		count, inUse = s.Count, s.InUseCount
		if s.InstanceProperties != nil {
			machine = s.InstanceProperties.MachineType
		}
	}
	if r.Status != "READY" {
		problems = append(problems, fmt.Sprintf("its status is %s, not READY", r.Status))
	}
	if owner != n.Project && !sharedWith(r, n.Project) {
		problems = append(problems, fmt.Sprintf("%s does not share it with %s (shareSettings: %s)", owner, n.Project, shareText(r.ShareSettings)))
	}
	if machine != n.MachineType {
		problems = append(problems, fmt.Sprintf("it holds %s, and gpu.type needs %s", orNone(machine), n.MachineType))
	}
	if free := count - inUse; free < int64(n.Nodes) {
		problems = append(problems, fmt.Sprintf("%d of its %d machines are free (%d in use), and gpu.nodes is %d", free, count, inUse, n.Nodes))
	}
	have := fmt.Sprintf("reservation %q in %s: %d × %s, %d in use", n.Reservation, n.Zone, count, orNone(machine), inUse)
	if owner != n.Project {
		have = fmt.Sprintf("reservation %q of %s in %s: %d × %s, %d in use", n.Reservation, owner, n.Zone, count, orNone(machine), inUse)
	}
	if len(problems) > 0 {
		f.Status, f.Detail = cmd.Failed, have+"; "+strings.Join(problems, "; ")
		f.Fix = "use a reservation that fits (" + listFix + "), or lower gpu.nodes"
		return f
	}
	f.Status, f.Detail = cmd.OK, have
	return f
}

// sharedWith reports whether a reservation's share settings let project use it: any project of
// the owner's organization (ORGANIZATION), or the projects of projectMap (SPECIFIC_PROJECTS),
// keyed by project ID (Compute Engine's ShareSettings reference: "A map of project id and
// project config") or, as Terraform's google_compute_reservation documents it, by project
// number, which preflight does not know: a map keyed by numbers is taken as sharing it.
func sharedWith(r *compute.Reservation, project string) bool {
	s := r.ShareSettings
	if s == nil {
		return false
	}
	switch s.ShareType {
	case "ORGANIZATION":
		return true
	case "SPECIFIC_PROJECTS":
		for key, p := range s.ProjectMap {
			if key == project || p.ProjectId == project || isProjectNumber(key) {
				return true
			}
		}
	}
	return false
}

// shareText says whom a reservation is shared with.
func shareText(s *compute.ShareSettings) string {
	if s == nil || s.ShareType == "" {
		return "none"
	}
	text := s.ShareType
	if len(s.ProjectMap) > 0 {
		text += " " + strings.Join(slices.Sorted(maps.Keys(s.ProjectMap)), ", ")
	}
	return text
}

func isProjectNumber(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// testIamPermissionsMax is how many permissions one testIamPermissions call may ask about
// (Resource Manager's TestIamPermissionsRequest: "at most 100").
const testIamPermissionsMax = 100

func checkPermissions(ctx context.Context, c *Clients, n Needs) cmd.Finding {
	f := cmd.Finding{Name: CheckPermissions}
	granted := map[string]bool{}
	for batch := range slices.Chunk(n.Permissions, testIamPermissionsMax) {
		resp, err := c.ResourceManager.Projects.TestIamPermissions(n.Project, &crm.TestIamPermissionsRequest{Permissions: batch}).Context(ctx).Do()
		if err != nil {
			f.Status, f.Detail = cmd.Failed, "your permissions cannot be tested: "+apiMessage(err)
			f.Fix = fmt.Sprintf("run preflight again; your roles in the project: %s", iamConsole(n.Project))
			return f
		}
		for _, p := range resp.Permissions {
			granted[p] = true
		}
	}
	missing := notIn(n.Permissions, granted)
	if len(missing) > 0 {
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("you lack %d of the %d permissions up uses: %s", len(missing), len(n.Permissions), strings.Join(missing, ", "))
		f.Fix = fmt.Sprintf("grant the deployer the roles the README's Prerequisites list (what each is for: docs/ci.md) at %s", iamConsole(n.Project))
		return f
	}
	f.Status, f.Detail = cmd.OK, fmt.Sprintf("you hold the %d permissions up uses", len(n.Permissions))
	return f
}

// grantFix is the fix of a read the caller may not make: the permission, the predefined role
// that holds it, and where a project administrator grants it.
func grantFix(project, permission, role string) string {
	return fmt.Sprintf("reading it takes %s: have %s (or another role that holds it) granted at %s", permission, role, iamConsole(project))
}

// iamConsole is the console page of the project's IAM grants.
func iamConsole(project string) string {
	return "https://console.cloud.google.com/iam-admin/iam?project=" + project
}

// notIn is what of want has does not hold, in want's order.
func notIn(want []string, has map[string]bool) []string {
	var out []string
	for _, w := range want {
		if !has[w] {
			out = append(out, w)
		}
	}
	return out
}

// apiMessage is the API's own message of a failed call, or the error.
func apiMessage(err error) string {
	var gerr *googleapi.Error
	if errors.As(err, &gerr) && gerr.Message != "" {
		return fmt.Sprintf("%s (HTTP %d)", gerr.Message, gerr.Code)
	}
	return err.Error()
}

func isNotFound(err error) bool {
	var gerr *googleapi.Error
	return errors.As(err, &gerr) && gerr.Code == http.StatusNotFound
}

func accelerators(list []*compute.MachineTypeAccelerators) string {
	parts := make([]string, len(list))
	for i, a := range list {
		parts[i] = fmt.Sprintf("%d × %s", a.GuestAcceleratorCount, a.GuestAcceleratorType)
	}
	if len(parts) == 0 {
		return "no GPU"
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "no machine type"
	}
	return s
}
