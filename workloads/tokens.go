package workloads

import (
	"fmt"
	"path"
	"strings"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/secretmanager"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1args "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	k8scorev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	secretsstorev1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"
	"sigs.k8s.io/yaml"

	"gke-rl/internal/kube"
	"gke-rl/internal/naming"
)

// The tokens live in Secret Manager, never in Pulumi: the program creates each secret empty
// and grants the pods that read it access to it alone; the user adds the value with `gcloud
// secrets versions add`. GKE's Secret Manager add-on (a CSI driver) mounts them into the pods
// as files. Pulumi's state, its previews, the stack's passphrase and the preview identity
// never see a token.

// Token is one token: the suffix of its secret's ID, the file pods read it from and the
// variable that tells its library where that file is; the pods that read it run as Reader, the
// only principal granted access to its secret, and mount it alone through ProviderClass.
type Token struct{ Secret, File, Env, Reader, ProviderClass string }

var (
	// HFToken is the Hugging Face token, read by huggingface_hub from HF_TOKEN_PATH. Only the
	// data preparation downloads from the Hub (the Ray pods run offline: OfflineEnv), so only
	// its pods read it.
	HFToken = Token{Secret: "hf-token", File: "hf-token", Env: "HF_TOKEN_PATH", Reader: "rl-hf-reader", ProviderClass: "rl-hf-token"}
	// WandBNetrc is a netrc entry for api.wandb.ai: W&B reads its key from the netrc file that
	// NETRC names when WANDB_API_KEY is not set. The run logs from the Ray pods (NeMo RL's driver
	// on the head, verl's TaskRunner actor on a worker: verl/trainer/main_ppo.py at v0.6.0), so
	// only they read it.
	WandBNetrc = Token{Secret: "wandb-netrc", File: "netrc", Env: "NETRC", Reader: "rl-wandb-reader", ProviderClass: "rl-wandb-netrc"}
)

// TokensMountPath is where pods mount their token's file, read-only.
const TokensMountPath = "/var/run/secrets/gke-rl/tokens"

// SecretManagerCSIDriver is the CSI driver of GKE's Secret Manager add-on (its SecretProviderClass
// provider is "gke"); the open-source Secrets Store CSI driver's is secrets-store.csi.k8s.io.
const SecretManagerCSIDriver = "secrets-store-gke.csi.k8s.io"

// SecretAccessorRole reads a secret's versions.
const SecretAccessorRole = "roles/secretmanager.secretAccessor"

const tokensVolume = "tokens"

// Tokens are the tokens a run reads, and where their secrets are.
type Tokens struct {
	HF, WandB bool
	// Project holds the secrets; Prefix starts their IDs (the cluster's name).
	Project, Prefix string
}

// Any reports whether the run reads a token.
func (t Tokens) Any() bool { return t.HF || t.WandB }

// List are the tokens the run reads, in a fixed order.
func (t Tokens) List() []Token {
	var out []Token
	if t.HF {
		out = append(out, HFToken)
	}
	if t.WandB {
		out = append(out, WandBNetrc)
	}
	return out
}

// Readers are the Kubernetes service accounts of the pods that read a token, one a token: on a
// volume reached through Workload Identity (GCS FUSE) each needs the volume's access too.
func (t Tokens) Readers() []string {
	var out []string
	for _, tok := range t.List() {
		out = append(out, tok.Reader)
	}
	return out
}

// SecretID is the Secret Manager secret that holds a token: `<prefix>-hf-token` or
// `<prefix>-wandb-netrc`.
func (t Tokens) SecretID(tok Token) string { return t.Prefix + "-" + tok.Secret }

// PodTokens is what one group of pods gets of the tokens: the service account it runs as (empty
// when it reads none: the volume's, or the namespace's default), and its token's variable, volume
// and mount. No token is in any environment variable: NeMo RL copies the driver's whole
// environment into every actor's runtime environment (nemo_rl/distributed/virtual_cluster.py,
// init_ray), which the Ray dashboard shows.
type PodTokens struct {
	ServiceAccount string
	Env            []k8scorev1.EnvVar
	Volumes        []k8scorev1.Volume
	Mounts         []k8scorev1.VolumeMount
}

// ForPrep is the data preparation's: the Hugging Face token.
func (t Tokens) ForPrep() PodTokens { return podTokens(HFToken, t.HF) }

// ForRay is the Ray pods': the W&B netrc.
func (t Tokens) ForRay() PodTokens { return podTokens(WandBNetrc, t.WandB) }

// podTokens mounts tok when on: the add-on's CSI volume, which fetches the secret with the pod's
// Workload Identity when the pod starts.
func podTokens(tok Token, on bool) PodTokens {
	if !on {
		return PodTokens{}
	}
	return PodTokens{
		ServiceAccount: tok.Reader,
		Env:            []k8scorev1.EnvVar{{Name: tok.Env, Value: path.Join(TokensMountPath, tok.File)}},
		Volumes: []k8scorev1.Volume{{Name: tokensVolume, VolumeSource: k8scorev1.VolumeSource{
			CSI: &k8scorev1.CSIVolumeSource{
				Driver:           SecretManagerCSIDriver,
				ReadOnly:         ptr.To(true),
				VolumeAttributes: map[string]string{"secretProviderClass": tok.ProviderClass},
			},
		}}},
		Mounts: []k8scorev1.VolumeMount{{Name: tokensVolume, MountPath: TokensMountPath, ReadOnly: true}},
	}
}

// providerSecret is one entry of the add-on's `secrets` parameter.
type providerSecret struct {
	ResourceName string `json:"resourceName"`
	Path         string `json:"path"`
}

// ProviderClass is the SecretProviderClass that maps tok's latest version to its file, and no
// other secret. The add-on's format: provider "gke", and a `secrets` parameter listing
// resourceName and path (Secret Manager documentation, "Use the Secret Manager add-on with GKE").
func (t Tokens) ProviderClass(namespace string, tok Token) (*secretsstorev1.SecretProviderClass, error) {
	secrets, err := yaml.Marshal([]providerSecret{{
		ResourceName: fmt.Sprintf("projects/%s/secrets/%s/versions/latest", t.Project, t.SecretID(tok)),
		Path:         tok.File,
	}})
	if err != nil {
		return nil, err
	}
	return &secretsstorev1.SecretProviderClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: secretsstorev1.GroupVersion.String(), Kind: "SecretProviderClass"},
		ObjectMeta: metav1.ObjectMeta{Name: tok.ProviderClass, Namespace: namespace},
		Spec: secretsstorev1.SecretProviderClassSpec{
			Provider:   "gke",
			Parameters: map[string]string{"secrets": string(secrets)},
		},
	}, nil
}

// AddVersionCommand is the command that stores a token's value: it reads the value without
// echoing it (read -rs) and pipes it to gcloud, so that it never appears on a command line or in
// the shell's history. The W&B secret is a netrc entry, which the command writes around the key
// (NETRC: W&B reads the password of machine api.wandb.ai); a raw key stored there would not be
// read.
func (t Tokens) AddVersionCommand(tok Token) string {
	add := fmt.Sprintf("gcloud secrets versions add %s --project %s --data-file=-", t.SecretID(tok), t.Project)
	if tok == WandBNetrc {
		return `read -rs WANDB_KEY && printf 'machine api.wandb.ai\n  login user\n  password %s\n' "$WANDB_KEY" | ` + add
	}
	return `read -rs HF_TOKEN && printf %s "$HF_TOKEN" | ` + add
}

// TokensArgs place the tokens.
type TokensArgs struct {
	Tokens Tokens
	// Principal is the Workload Identity principal of a Kubernetes service account of the
	// namespace: each token's Reader is granted access to its secret alone.
	Principal func(projectNumber, serviceAccount string) string
	// Placement places the SecretProviderClass; it waits for the add-on's CRD.
	Placement kube.Placement
}

// TokenStore is the tokens' secrets, their bindings and the SecretProviderClass.
type TokenStore struct {
	pulumi.ResourceState

	// Ready is what pods that mount a token wait for: each secret's binding, its reader's
	// service account, its SecretProviderClass.
	Ready []pulumi.Resource
	// Commands are the commands that store each token's value.
	Commands pulumi.StringArray
}

// NewTokens registers the secrets (empty), the reader's access to each, and the
// SecretProviderClass; nothing without tokens.
func NewTokens(ctx *pulumi.Context, name string, args *TokensArgs, opts ...pulumi.ResourceOption) (*TokenStore, error) {
	t := args.Tokens
	if !t.Any() {
		return nil, nil
	}
	s := &TokenStore{}
	if err := ctx.RegisterComponentResource("gke-rl:workloads:Tokens", name, s, opts...); err != nil {
		return nil, err
	}
	kids := naming.Children{Component: name, Parent: s}
	for _, tok := range t.List() {
		secretName, secretOpts := kids.Of(tok.Secret, "")
		secret, err := secretmanager.NewSecret(ctx, secretName, &secretmanager.SecretArgs{
			Project:     pulumi.String(t.Project),
			SecretId:    pulumi.String(t.SecretID(tok)),
			Replication: &secretmanager.SecretReplicationArgs{Auto: &secretmanager.SecretReplicationAutoArgs{}},
			Labels:      pulumi.StringMap{"gke-rl-cluster": pulumi.String(t.Prefix)},
		}, secretOpts...)
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", tok.Secret, err)
		}
		// Secret Manager names a secret by project number whatever the request said
		// (projects/<number>/secrets/<id>: `gcloud secrets describe`, and
		// hashicorp/terraform-provider-google#11343 on the resource's `name`), which the Workload
		// Identity principal needs: no getProject invoke (it reads Cloud Billing too), no extra
		// permission. A name without a number fails the binding instead of misbinding it.
		member := secret.Name.ApplyT(func(n string) (string, error) {
			number, err := ProjectNumberOf(n)
			if err != nil {
				return "", err
			}
			return args.Principal(number, tok.Reader), nil
		}).(pulumi.StringOutput)
		bindingName, bindingOpts := kids.Of(tok.Secret+"-reader", "")
		binding, err := secretmanager.NewSecretIamMember(ctx, bindingName, &secretmanager.SecretIamMemberArgs{
			Project:  secret.Project,
			SecretId: secret.SecretId,
			Role:     pulumi.String(SecretAccessorRole),
			Member:   member,
		}, bindingOpts...)
		if err != nil {
			return nil, fmt.Errorf("secret %s reader: %w", tok.Secret, err)
		}
		s.Ready = append(s.Ready, binding)
		s.Commands = append(s.Commands, pulumi.String(t.AddVersionCommand(tok)))
		// The pods that read it run as an account of their own, which no other pod uses.
		reader, err := corev1.NewServiceAccount(ctx, naming.Child(name, tok.Secret+"-reader-account"), &corev1.ServiceAccountArgs{
			Metadata: &metav1args.ObjectMetaArgs{Name: pulumi.String(tok.Reader), Namespace: pulumi.String(args.Placement.Namespace)},
			// Its pods call no Kubernetes API (kube.Harden).
			AutomountServiceAccountToken: pulumi.Bool(false),
		}, args.Placement.Namespaced(pulumi.Parent(s))...)
		if err != nil {
			return nil, fmt.Errorf("%s reader service account: %w", tok.Secret, err)
		}
		class, err := t.ProviderClass(args.Placement.Namespace, tok)
		if err != nil {
			return nil, err
		}
		classObj, err := kube.NewObject(ctx, naming.Child(name, tok.Secret+"-provider-class"), class, args.Placement.Namespaced(pulumi.Parent(s))...)
		if err != nil {
			return nil, fmt.Errorf("%s secret provider class: %w", tok.Secret, err)
		}
		s.Ready = append(s.Ready, reader, classObj)
	}
	if err := ctx.RegisterResourceOutputs(s, pulumi.Map{"commands": s.Commands}); err != nil {
		return nil, err
	}
	return s, nil
}

// ProjectNumberOf reads the project number from a Secret Manager resource name,
// `projects/<number>/secrets/<id>`.
func ProjectNumberOf(secretName string) (string, error) {
	parts := strings.Split(secretName, "/")
	if len(parts) < 4 || parts[0] != "projects" || parts[2] != "secrets" || strings.Trim(parts[1], "0123456789") != "" || parts[1] == "" {
		return "", fmt.Errorf("secret name %q is not projects/<number>/secrets/<id>", secretName)
	}
	return parts[1], nil
}
