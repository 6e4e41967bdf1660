package preflight

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"gke-rl/cmd"

	"google.golang.org/api/googleapi"
)

// CheckLustre is the check of the project's Managed Lustre instances, with storage.type=lustre.
const CheckLustre = "lustre"

// LustreInstancesPerProject is Managed Lustre's system limit "Maximum number of instances per
// project" (docs.cloud.google.com/managed-lustre/docs/quotas, System limits: 20). It is a
// limit, not a quota: it cannot be raised, and no quota metric reports it, so preflight counts.
const LustreInstancesPerProject = 20

// lustreInstancesURL lists every instance of a project in every location, as `gcloud lustre
// instances list --location=-` asks it (storage/cleanup_test.go records the real gcloud's call).
// google.golang.org/api has no Managed Lustre client; the call goes through the same
// authenticated HTTP client.
const lustreInstancesURL = "https://lustre.googleapis.com/v1/projects/%s/locations/-/instances"

type lustreInstance struct {
	Name        string `json:"name"`
	State       string `json:"state"`
	CapacityGib string `json:"capacityGib"`
}

// listLustre reads every instance of the project, page by page.
func listLustre(ctx context.Context, client *http.Client, project string) ([]lustreInstance, error) {
	var all []lustreInstance
	token := ""
	for {
		u := fmt.Sprintf(lustreInstancesURL, url.PathEscape(project))
		if token != "" {
			u += "?pageToken=" + url.QueryEscape(token)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		var page struct {
			Instances     []lustreInstance `json:"instances"`
			NextPageToken string           `json:"nextPageToken"`
		}
		err = googleapi.CheckResponse(resp)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&page)
		}
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, page.Instances...)
		if token = page.NextPageToken; token == "" {
			return all, nil
		}
	}
}

// checkLustre asks what creating the stack's instance meets: the project's limit of instances,
// and the instance of the same name an earlier `pulumi destroy` may have kept, which up creates
// again only by taking it over (storage.adopt).
func checkLustre(ctx context.Context, c *Clients, n Needs) cmd.Finding {
	f := cmd.Finding{Name: CheckLustre}
	l := n.Lustre
	if l == nil {
		f.Status, f.Detail = cmd.Skipped, "storage.type is not lustre"
		return f
	}
	instances, err := listLustre(ctx, c.HTTP, n.Project)
	if err != nil {
		f.Status, f.Detail = cmd.Failed, "the project's Managed Lustre instances cannot be read: "+apiMessage(err)
		f.Fix = grantFix(n.Project, "lustre.instances.list", "roles/lustre.viewer")
		return f
	}
	var own *lustreInstance
	var others []string
	for i, in := range instances {
		if in.Name == l.Name {
			own = &instances[i]
			continue
		}
		others = append(others, in.Name[strings.LastIndex(in.Name, "/")+1:])
	}
	list := fmt.Sprintf("`gcloud lustre instances list --project %s --location=-`", n.Project)
	switch {
	case own == nil && l.Adopt:
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("storage.adopt is on, and there is no instance %s to take over", l.Name)
		f.Fix = fmt.Sprintf("turn it off to create the instance (`pulumi config set --path storage.adopt false`), or name the stack's kept instance: %s lists them", list)
	case own == nil && len(others) >= LustreInstancesPerProject:
		f.Status, f.Detail = cmd.Failed, fmt.Sprintf("the project has %d Managed Lustre instances (%s), the most a project may have, and up creates one more", len(others), strings.Join(others, ", "))
		f.Fix = fmt.Sprintf("delete one you no longer need (%s; `gcloud lustre instances delete NAME --location ZONE --project %s`): the limit cannot be raised", list, n.Project)
	case own != nil && !l.Adopt:
		f.Status = cmd.OK
		f.Detail = fmt.Sprintf("%s exists (%s, %s GiB): this stack's, if it is deployed; if an earlier destroy kept it, up fails to create it again unless storage.adopt is on", l.Name, own.State, own.CapacityGib)
	case own != nil:
		f.Status, f.Detail = cmd.OK, fmt.Sprintf("%s exists (%s, %s GiB) and storage.adopt takes it over", l.Name, own.State, own.CapacityGib)
	default:
		f.Status, f.Detail = cmd.OK, fmt.Sprintf("the project has %d other Managed Lustre instances of the %d it may have", len(others), LustreInstancesPerProject)
	}
	return f
}
