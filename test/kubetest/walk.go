package kubetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gke-rl/infra/offline"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Walk applies a planned stack to the control plane as `pulumi up` would: each resource starts
// once every resource it depends on (the plan's dependencies) is done, in parallel otherwise.
// Kubernetes objects are applied with server-side apply and awaited as pulumi-kubernetes v4.32.0
// awaits them (a Job until Complete, a DaemonSet until every scheduled pod is updated and
// available; RayJobs and RayClusters are not awaited); a GKE node pool is created after
// PoolDelay, its initial nodes Ready; the other cloud resources take no time.
type Walk struct {
	CP    *ControlPlane
	Nodes *Nodes
	Plan  *offline.Result
	// PoolDelay is how long a node pool's creation takes (10 to 30 minutes on GKE for GPU
	// pools of reserved capacity).
	PoolDelay time.Duration
	// JobSucceeds says whether the script of a Job (by name) succeeds: the walk completes the
	// pods of a Job it awaits when it does. Nil: every Job succeeds.
	JobSucceeds func(name string) bool
	// Volume is a directory standing for the shared volume, where the experiments' launches
	// read a finished run's record (RunLaunches); empty, a new empty one.
	Volume string
	// LaunchLog is what the launches' scripts printed.
	LaunchLog strings.Builder

	mu sync.Mutex
	// Done is when each resource (by URN) was done.
	Done map[string]time.Time
}

// Run walks the plan and returns the first error: a refused object, a Job that failed, a
// timeout.
func (w *Walk) Run(t testing.TB) error {
	t.Helper()
	w.Done = map[string]time.Time{}
	if w.Volume == "" {
		w.Volume = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := w.CP.As(t, Admin)
	byURN := map[string]*offline.Resource{}
	done := map[string]chan struct{}{}
	for _, r := range w.Plan.Resources {
		byURN[r.URN] = r
		done[r.URN] = make(chan struct{})
	}
	errs := make(chan error, len(w.Plan.Resources))
	var wg sync.WaitGroup
	for _, r := range w.Plan.Resources {
		wg.Add(1)
		go func(r *offline.Resource) {
			defer wg.Done()
			for _, dep := range r.Dependencies {
				if ch, ok := done[dep]; ok {
					select {
					case <-ch:
					case <-ctx.Done():
						return
					}
				}
			}
			if err := w.create(ctx, admin, r); err != nil {
				errs <- fmt.Errorf("%s %s: %w", r.Type, r.Name, err)
				cancel()
				return
			}
			w.mu.Lock()
			w.Done[r.URN] = time.Now()
			w.mu.Unlock()
			close(done[r.URN])
		}(r)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return fmt.Errorf("%w\n%s", err, w.CP.Pods(context.Background()))
	}
	return ctx.Err()
}

// Pods describes every pod that is not running or done, with what holds it, for a failure
// message.
func (cp *ControlPlane) Pods(ctx context.Context) string {
	pods, err := cp.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s/%s on %q: %s", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				fmt.Fprintf(&b, "; %s: %s", c.Type, c.Message)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// DoneAt is when the resource of type typ and name was done.
func (w *Walk) DoneAt(t testing.TB, typ, name string) time.Time {
	t.Helper()
	r := w.Plan.Find(typ, name)
	if r == nil {
		t.Fatalf("no %s %s in the plan", typ, name)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.Done[r.URN]
}

func (w *Walk) create(ctx context.Context, admin *Session, r *offline.Resource) error {
	switch {
	case r.Type == "gcp:container/nodePool:NodePool":
		select {
		case <-time.After(w.PoolDelay):
		case <-ctx.Done():
			return ctx.Err()
		}
		p, err := PoolOf(r, w.Plan.Blueprint.Zone)
		if err != nil {
			return err
		}
		return w.Nodes.CreatePool(ctx, p)
	case r.Custom && strings.HasPrefix(r.Type, "kubernetes:") && !strings.HasPrefix(r.Type, "kubernetes:index:"):
		m, ok := offline.ManifestOf(r)
		if !ok {
			return nil
		}
		applied, err := admin.Apply(ctx, m.Object, false)
		if err != nil {
			return err
		}
		return w.await(ctx, admin, applied)
	}
	return nil
}

// await waits as pulumi-kubernetes does for the kinds it awaits.
func (w *Walk) await(ctx context.Context, admin *Session, u *unstructured.Unstructured) error {
	switch u.GetKind() {
	case "Job":
		return w.awaitJob(ctx, u.GetNamespace(), u.GetName())
	case "DaemonSet":
		return poll(ctx, func() (bool, error) {
			cur, err := admin.Get(ctx, u.Object)
			if err != nil {
				return false, err
			}
			gen, _, _ := unstructured.NestedInt64(cur.Object, "status", "observedGeneration")
			desired, _, _ := unstructured.NestedInt64(cur.Object, "status", "desiredNumberScheduled")
			updated, _, _ := unstructured.NestedInt64(cur.Object, "status", "updatedNumberScheduled")
			available, _, _ := unstructured.NestedInt64(cur.Object, "status", "numberAvailable")
			return gen >= cur.GetGeneration() && updated == desired && available == desired, nil
		})
	}
	return nil
}

// awaitJob completes the Job's running pods when its script succeeds, and waits for the Job's
// Complete condition (or fails on its Failed one).
func (w *Walk) awaitJob(ctx context.Context, ns, name string) error {
	succeeds := w.JobSucceeds == nil || w.JobSucceeds(name)
	return poll(ctx, func() (bool, error) {
		job, err := w.CP.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range job.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				return true, nil
			case batchv1.JobFailed:
				if IsLaunch(job.Spec.Template.Spec) {
					w.mu.Lock()
					defer w.mu.Unlock()
					return false, fmt.Errorf("job %s failed: %s; the launches printed:\n%s", name, c.Message, w.LaunchLog.String())
				}
				return false, fmt.Errorf("job %s failed: %s", name, c.Message)
			}
		}
		switch {
		case IsLaunch(job.Spec.Template.Spec):
			out, err := w.CP.RunLaunches(ctx, ns, name, w.Volume)
			w.mu.Lock()
			w.LaunchLog.WriteString(out)
			w.mu.Unlock()
			return false, err
		case succeeds:
			return false, w.CP.CompleteRunningPods(ctx, ns, "batch.kubernetes.io/job-name="+name)
		}
		return false, nil
	})
}

// CompleteRunningPods lets kwok complete the running pods of the selector: their scripts have
// succeeded.
func (cp *ControlPlane) CompleteRunningPods(ctx context.Context, ns, selector string) error {
	pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Annotations[CompleteAnnotation] != "" {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, CompleteAnnotation)
		if _, err := cp.Client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// poll calls cond every 200 ms until it holds, fails, or ctx ends.
func poll(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
