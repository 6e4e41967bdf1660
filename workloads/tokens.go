package workloads

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	k8scorev1 "k8s.io/api/core/v1"

	"gke-rl/infra/kube"
)

// TokensSecret is the Secret that holds the tokens; its keys are the variables pods read.
const TokensSecret = "rl-tokens"

// The token variables, as the Hugging Face and W&B libraries read them.
const (
	HFTokenKey     = "HF_TOKEN"
	WandBAPIKeyKey = "WANDB_API_KEY"
)

// Tokens are the optional secret tokens; an unset one is nil.
type Tokens struct {
	HF, WandB pulumi.StringOutput
	// HasHF and HasWandB say which are set.
	HasHF, HasWandB bool
}

// Any reports whether a token is set.
func (t Tokens) Any() bool { return t.HasHF || t.HasWandB }

// Env is how pods read the set tokens: by reference to the Secret, never by value, so that no
// pod spec, command line or runtime environment holds them.
func (t Tokens) Env() []k8scorev1.EnvVar {
	var env []k8scorev1.EnvVar
	for _, kv := range []struct {
		key string
		set bool
	}{{HFTokenKey, t.HasHF}, {WandBAPIKeyKey, t.HasWandB}} {
		if kv.set {
			env = append(env, k8scorev1.EnvVar{Name: kv.key, ValueFrom: &k8scorev1.EnvVarSource{
				SecretKeyRef: &k8scorev1.SecretKeySelector{
					LocalObjectReference: k8scorev1.LocalObjectReference{Name: TokensSecret},
					Key:                  kv.key,
				},
			}})
		}
	}
	return env
}

// NewTokensSecret registers the Secret with the set tokens, or nothing when none is set.
// Pulumi keeps the values as secrets in its state; the Secret's data never appears in a plan.
func NewTokensSecret(ctx *pulumi.Context, name string, t Tokens, p kube.Placement) (*corev1.Secret, error) {
	if !t.Any() {
		return nil, nil
	}
	data := pulumi.StringMap{}
	if t.HasHF {
		data[HFTokenKey] = pulumi.ToSecret(t.HF).(pulumi.StringOutput)
	}
	if t.HasWandB {
		data[WandBAPIKeyKey] = pulumi.ToSecret(t.WandB).(pulumi.StringOutput)
	}
	return corev1.NewSecret(ctx, name, &corev1.SecretArgs{
		Metadata:   &metav1.ObjectMetaArgs{Name: pulumi.String(TokensSecret), Namespace: pulumi.String(p.Namespace)},
		Type:       pulumi.String("Opaque"),
		StringData: data,
	}, p.Namespaced()...)
}
