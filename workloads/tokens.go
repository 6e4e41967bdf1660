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

	"gke-rl/infra/kube"
	"gke-rl/infra/naming"
)

// The tokens live in Secret Manager, never in Pulumi: the program creates each secret empty
// and grants the pods that read it access to it alone; the user adds the value with `gcloud
// secrets versions add`. GKE's Secret Manager add-on (a CSI driver) mounts them into the pods
// as files. Pulumi's state, its previews, the stack's passphrase and the preview identity
// never see a token.

// Token is one token: the suffix of its secret's ID, and the file pods read it from.
type Token struct{ Secret, File string }

var (
	// HFToken is the Hugging Face token, read by huggingface_hub from HF_TOKEN_PATH.
	HFToken = Token{Secret: "hf-token", File: "hf-token"}
	// WandBNetrc is a netrc entry for api.wandb.ai: W&B reads its key from the netrc file that
	// NETRC names when WANDB_API_KEY is not set.
	WandBNetrc = Token{Secret: "wandb-netrc", File: "netrc"}
)

// TokensMountPath is where pods mount the token files, read-only.
const TokensMountPath = "/var/run/secrets/gke-rl/tokens"

// TokensProviderClass is the SecretProviderClass that names the tokens' secrets for the
// Secret Manager add-on.
const TokensProviderClass = "rl-tokens"

// SecretManagerCSIDriver is the CSI driver of GKE's Secret Manager add-on (its SecretProviderClass
// provider is "gke"); the open-source Secrets Store CSI driver's is secrets-store.csi.k8s.io.
const SecretManagerCSIDriver = "secrets-store-gke.csi.k8s.io"

// SecretAccessorRole reads a secret's versions.
const SecretAccessorRole = "roles/secretmanager.secretAccessor"

const tokensVolume = "tokens"

// TokenReaderServiceAccount is the Kubernetes service account that the pods which mount the
// tokens run as when the shared volume needs none (Lustre): a principal of their own, so that
// no other pod of the namespace (the submitter, the gate) can read the secrets through the
// metadata server.
const TokenReaderServiceAccount = "rl-tokens-reader"

// Tokens are the tokens a run reads, and where their secrets are.
type Tokens struct {
	HF, WandB bool
	// Project holds the secrets; Prefix starts their IDs (the cluster's name).
	Project, Prefix string
	// Reader is the Kubernetes service account the pods that mount the tokens run as: the
	// shared volume's, or TokenReaderServiceAccount, which NewTokens then creates.
	Reader string
}

// ReaderFor is the service account of the pods that mount the tokens, given the shared
// volume's (empty when it needs none): that one, or TokenReaderServiceAccount; empty without
// tokens.
func (t Tokens) ReaderFor(volumeServiceAccount string) string {
	switch {
	case !t.Any():
		return ""
	case volumeServiceAccount != "":
		return volumeServiceAccount
	}
	return TokenReaderServiceAccount
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

// SecretID is the Secret Manager secret that holds a token: `<prefix>-hf-token` or
// `<prefix>-wandb-netrc`.
func (t Tokens) SecretID(tok Token) string { return t.Prefix + "-" + tok.Secret }

// Env tells the Hugging Face and W&B libraries where the token files are. No token is in any
// environment variable: NeMo RL copies the driver's whole environment into every actor's
// runtime environment (nemo_rl/distributed/virtual_cluster.py, init_ray), which the Ray
// dashboard shows.
func (t Tokens) Env() []k8scorev1.EnvVar {
	var env []k8scorev1.EnvVar
	if t.HF {
		env = append(env, k8scorev1.EnvVar{Name: "HF_TOKEN_PATH", Value: path.Join(TokensMountPath, HFToken.File)})
	}
	if t.WandB {
		env = append(env, k8scorev1.EnvVar{Name: "NETRC", Value: path.Join(TokensMountPath, WandBNetrc.File)})
	}
	return env
}

// Volumes are the pod volumes of the token files (none without tokens): the add-on's CSI
// volume, which fetches the secrets with the pod's Workload Identity when the pod starts.
func (t Tokens) Volumes() []k8scorev1.Volume {
	if !t.Any() {
		return nil
	}
	return []k8scorev1.Volume{{Name: tokensVolume, VolumeSource: k8scorev1.VolumeSource{
		CSI: &k8scorev1.CSIVolumeSource{
			Driver:           SecretManagerCSIDriver,
			ReadOnly:         ptr.To(true),
			VolumeAttributes: map[string]string{"secretProviderClass": TokensProviderClass},
		},
	}}}
}

// Mounts mount the token files read-only (none without tokens).
func (t Tokens) Mounts() []k8scorev1.VolumeMount {
	if !t.Any() {
		return nil
	}
	return []k8scorev1.VolumeMount{{Name: tokensVolume, MountPath: TokensMountPath, ReadOnly: true}}
}

// providerSecret is one entry of the add-on's `secrets` parameter.
type providerSecret struct {
	ResourceName string `json:"resourceName"`
	Path         string `json:"path"`
}

// ProviderClass is the SecretProviderClass that maps each token's latest version to its file.
// The add-on's format: provider "gke", and a `secrets` parameter listing resourceName and path
// (Secret Manager documentation, "Use the Secret Manager add-on with GKE").
func (t Tokens) ProviderClass(namespace string) (*secretsstorev1.SecretProviderClass, error) {
	var entries []providerSecret
	for _, tok := range t.List() {
		entries = append(entries, providerSecret{
			ResourceName: fmt.Sprintf("projects/%s/secrets/%s/versions/latest", t.Project, t.SecretID(tok)),
			Path:         tok.File,
		})
	}
	secrets, err := yaml.Marshal(entries)
	if err != nil {
		return nil, err
	}
	return &secretsstorev1.SecretProviderClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: secretsstorev1.GroupVersion.String(), Kind: "SecretProviderClass"},
		ObjectMeta: metav1.ObjectMeta{Name: TokensProviderClass, Namespace: namespace},
		Spec: secretsstorev1.SecretProviderClassSpec{
			Provider:   "gke",
			Parameters: map[string]string{"secrets": string(secrets)},
		},
	}, nil
}

// AddVersionCommand is the command that stores a token's value, read from standard input: the
// value never appears on a command line.
func (t Tokens) AddVersionCommand(tok Token) string {
	return fmt.Sprintf("gcloud secrets versions add %s --project %s --data-file=-", t.SecretID(tok), t.Project)
}

// TokensArgs place the tokens.
type TokensArgs struct {
	Tokens Tokens
	// Principal is the Workload Identity principal of Tokens.Reader, the only principal
	// granted access, on these secrets alone.
	Principal func(projectNumber string) string
	// Placement places the SecretProviderClass; it waits for the add-on's CRD.
	Placement kube.Placement
}

// TokenStore is the tokens' secrets, their bindings and the SecretProviderClass.
type TokenStore struct {
	pulumi.ResourceState

	// Ready is what pods that mount the tokens wait for: each secret's binding, the reader's
	// service account, the SecretProviderClass.
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
			return args.Principal(number), nil
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
	}
	if t.Reader == TokenReaderServiceAccount {
		reader, err := corev1.NewServiceAccount(ctx, naming.Child(name, "reader"), &corev1.ServiceAccountArgs{
			Metadata: &metav1args.ObjectMetaArgs{Name: pulumi.String(TokenReaderServiceAccount), Namespace: pulumi.String(args.Placement.Namespace)},
			// Its pods call no Kubernetes API (kube.Harden).
			AutomountServiceAccountToken: pulumi.Bool(false),
		}, args.Placement.Namespaced(pulumi.Parent(s))...)
		if err != nil {
			return nil, fmt.Errorf("token reader service account: %w", err)
		}
		s.Ready = append(s.Ready, reader)
	}
	class, err := t.ProviderClass(args.Placement.Namespace)
	if err != nil {
		return nil, err
	}
	classObj, err := kube.NewObject(ctx, naming.Child(name, "provider-class"), class, args.Placement.Namespaced(pulumi.Parent(s))...)
	if err != nil {
		return nil, fmt.Errorf("secret provider class: %w", err)
	}
	s.Ready = append(s.Ready, classObj)
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
