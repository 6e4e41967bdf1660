package cluster

import "time"

// MinorSupport is when GKE's standard support of a minor version ends.
type MinorSupport struct {
	Minor string
	Ends  time.Time
}

// StandardSupportEnds are the ends of standard support of the GKE minor versions that the
// release channels other than Extended create clusters on, newest last. GKE refuses a
// maintenance exclusion of scope NO_MINOR_OR_NODE_UPGRADES that ends after the end of standard
// support of the cluster's minor version. Source: GKE's release schedule
// (cloud.google.com/kubernetes-engine/docs/release-schedule), as endoflife.date's
// google-kubernetes-engine API reproduced it on 2026-04-10 ("eolFrom"): 1.33 2026-08-03, 1.34
// 2026-10-01, 1.35 2027-04-11; 1.35 is the Regular channel's default for new clusters since
// September 2026 (GKE release notes, 2026-R40). Add the next minor when its schedule is
// published.
var StandardSupportEnds = []MinorSupport{
	{Minor: "1.33", Ends: time.Date(2026, 8, 3, 0, 0, 0, 0, time.UTC)},
	{Minor: "1.34", Ends: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)},
	{Minor: "1.35", Ends: time.Date(2027, 4, 11, 0, 0, 0, 0, time.UTC)},
}

// LatestSupportEnd is the newest minor version's end of standard support: no exclusion of scope
// NO_MINOR_OR_NODE_UPGRADES may end later on a cluster created today (Extended channel aside).
func LatestSupportEnd() MinorSupport { return StandardSupportEnds[len(StandardSupportEnds)-1] }
