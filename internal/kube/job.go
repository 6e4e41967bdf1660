package kube

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// RunOnceJob is a Job whose pods are never restarted in place: a failed pod counts against
// backoffLimit, and a retry is a new pod.
func RunOnceJob(name, namespace string, backoffLimit int32, template corev1.PodTemplateSpec) *batchv1.Job {
	template.Spec.RestartPolicy = corev1.RestartPolicyNever
	Harden(&template.Spec)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       batchv1.JobSpec{BackoffLimit: ptr.To(backoffLimit), Template: template},
	}
}
