package workloads

import (
	"path"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	k8scorev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"gke-rl/infra/kube"
)

// TokensSecret is the Secret that holds the tokens.
const TokensSecret = "rl-tokens"

// The Secret's keys, which are also the file names pods read them from.
const (
	HFTokenKey = "hf-token"
	// WandBNetrcKey holds a netrc entry for api.wandb.ai: W&B reads its key from the netrc file
	// that NETRC names when WANDB_API_KEY is not set.
	WandBNetrcKey = "netrc"
)

// TokensMountPath is where pods mount the Secret, read-only.
const TokensMountPath = "/var/run/secrets/gke-rl/tokens"

const tokensVolume = "tokens"

// Tokens are the optional secret tokens; an unset one is nil.
type Tokens struct {
	HF, WandB pulumi.StringOutput
	// HasHF and HasWandB say which are set.
	HasHF, HasWandB bool
}

// Any reports whether a token is set.
func (t Tokens) Any() bool { return t.HasHF || t.HasWandB }

// Env tells the Hugging Face and W&B libraries where the token files are. No token is in any
// environment variable: NeMo RL copies the driver's whole environment into every actor's
// runtime environment (nemo_rl/distributed/virtual_cluster.py, init_ray), which the Ray
// dashboard shows.
func (t Tokens) Env() []k8scorev1.EnvVar {
	var env []k8scorev1.EnvVar
	if t.HasHF {
		env = append(env, k8scorev1.EnvVar{Name: "HF_TOKEN_PATH", Value: path.Join(TokensMountPath, HFTokenKey)})
	}
	if t.HasWandB {
		env = append(env, k8scorev1.EnvVar{Name: "NETRC", Value: path.Join(TokensMountPath, WandBNetrcKey)})
	}
	return env
}

// Volumes are the pod volumes of the token files (none without tokens).
func (t Tokens) Volumes() []k8scorev1.Volume {
	if !t.Any() {
		return nil
	}
	return []k8scorev1.Volume{{Name: tokensVolume, VolumeSource: k8scorev1.VolumeSource{
		Secret: &k8scorev1.SecretVolumeSource{SecretName: TokensSecret, DefaultMode: ptr.To(int32(0o400))},
	}}}
}

// Mounts mount the token files read-only (none without tokens).
func (t Tokens) Mounts() []k8scorev1.VolumeMount {
	if !t.Any() {
		return nil
	}
	return []k8scorev1.VolumeMount{{Name: tokensVolume, MountPath: TokensMountPath, ReadOnly: true}}
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
		netrc := pulumi.Sprintf("machine api.wandb.ai\n  login user\n  password %s\n", t.WandB)
		data[WandBNetrcKey] = pulumi.ToSecret(netrc).(pulumi.StringOutput)
	}
	return corev1.NewSecret(ctx, name, &corev1.SecretArgs{
		Metadata:   &metav1.ObjectMetaArgs{Name: pulumi.String(TokensSecret), Namespace: pulumi.String(p.Namespace)},
		Type:       pulumi.String("Opaque"),
		StringData: data,
	}, p.Namespaced()...)
}
