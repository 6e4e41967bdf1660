package preflight

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"time"

	"google.golang.org/api/option"

	"gke-rl/cmd"
	"gke-rl/infra"
	"gke-rl/infra/offline"
	"gke-rl/internal/cost"
)

// report prints the findings under "check", in columns as wide as "skip" and "machine type".
var report = cmd.Report{NameKey: "check", StatusWidth: 4, NameWidth: 12}

// timeout bounds the whole preflight: each check is one or two reads.
const timeout = 2 * time.Minute

// ClientsFor builds the clients for a project; Main uses NewClients with Google's endpoints.
type ClientsFor func(ctx context.Context, project string) (*Clients, error)

// Main is `go run . preflight ...`; it returns the process exit status.
func Main(args []string, env cmd.Env) int {
	return run(args, env, func(ctx context.Context, project string) (*Clients, error) {
		c, err := NewClients(ctx, option.WithQuotaProject(project))
		if err != nil {
			return nil, err
		}
		// The token the run reads, if the caller exported it: only the gated model's grant
		// needs it.
		c.Hub = NewHub(os.Getenv("HF_TOKEN"))
		return c, nil
	})
}

func run(args []string, env cmd.Env, clientsFor ClientsFor) int {
	stdout, stderr := env.Stdout, env.Stderr
	fs := flag.NewFlagSet("preflight", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sa cmd.StackArgs
	sa.Register(fs)
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	pricesOut := fs.String("prices-out", "", "also read today's list prices of the stack's machines from the Cloud Billing Catalog into the price file `FILE`, for plan --prices")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run . preflight --stack NAME (or -s NAME) [--config PATH=VALUE]... [--json] [--prices-out FILE]")
		fmt.Fprintln(fs.Output(), "Asks the stack's project, read-only and with your Application Default Credentials, what pulumi up needs:")
		fmt.Fprintln(fs.Output(), "the project, the enabled APIs, the machine types in the zone, the quotas it draws on (GPUs in the region and in all regions, the CPU pool's vCPUs, SSD, local SSD), the reservation, the Managed Lustre instances, your permissions;")
		fmt.Fprintln(fs.Output(), "then the Hugging Face Hub: the model and the datasets exist at their pinned revisions, the model's architecture and size, and with HF_TOKEN exported whether a gated model is granted to it;")
		fmt.Fprintln(fs.Output(), "with --prices-out, today's list prices of the stack's machines too, as a price file for plan --prices.")
		fs.PrintDefaults()
	}
	if code, done := sa.Parse(fs, args, stdout); done {
		return code
	}
	sc, err := offline.LoadStackConfig(env.Dir, sa.Name, sa.Overrides)
	if err == nil {
		sc.Siblings = infra.ReadSiblings(env.Dir, sa.Name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return cmd.ExitUsage
	}
	result, err := offline.Run(sc, sa.Name, env.Now())
	if err != nil {
		cmd.ReportRunError(stderr, err)
		return cmd.ExitCheckFailed
	}
	// A placeholder project or reservation would be asked about, and fail for the wrong reason;
	// the others (the workstation's address) are for preview and up to refuse.
	asked := 0
	for _, p := range result.Placeholders {
		fmt.Fprintf(stderr, "placeholder: %s: %s\n", p.Key, p.Message)
		if p.Key == infra.KeyGCPProject || p.Key == "gpu.reservation" {
			asked++
		}
	}
	if asked > 0 {
		fmt.Fprintln(stderr, "error: replace the project's and the reservation's placeholders first: preflight asks about them")
		return cmd.ExitCheckFailed
	}
	needs, err := NeedsOf(result)
	if err != nil {
		fmt.Fprintf(stderr, "internal error (please report it): %v\n", err)
		return cmd.ExitCheckFailed
	}

	// A model whose size the plan could not tell is planned again at the size the Hub tells.
	needs.FitWith = fitWith(env, sa.Name, sa.Overrides)

	limit := timeout
	if *pricesOut != "" {
		limit += pricesTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var prices *pricesRequest
	if *pricesOut != "" {
		prices = &pricesRequest{path: *pricesOut, bill: result.Blueprint.Bill, today: env.Now().UTC().Format(time.DateOnly), planArgs: sa.Args()}
	}
	findings, err := ask(ctx, clientsFor, needs, prices)
	if err != nil {
		fmt.Fprintf(stderr, "error: cannot ask Google's APIs: %v\n%s\n", err, cannotAskHint(err))
		return cmd.ExitCannotAsk
	}
	if *asJSON {
		if err := report.WriteJSON(stdout, findings); err != nil {
			return cmd.ExitCannotAsk
		}
	} else {
		Write(stdout, sa.Name, needs, findings)
	}
	if !Passed(findings) {
		return cmd.ExitCheckFailed
	}
	return cmd.ExitOK
}

// fitWith plans a stack again with job.modelSize set, and returns the plan's refusals as
// "key: message" lines, none when it plans.
func fitWith(env cmd.Env, stack string, overrides []string) func(modelSize string) []string {
	return func(modelSize string) []string {
		resized, err := offline.LoadStackConfig(env.Dir, stack, append(slices.Clone(overrides), "job.modelSize="+modelSize))
		if err != nil {
			return []string{err.Error()}
		}
		_, err = offline.Run(resized, stack, env.Now())
		var cfgErr *offline.ConfigError
		switch {
		case errors.As(err, &cfgErr):
			var out []string
			for _, p := range cfgErr.Problems {
				out = append(out, p.Error())
			}
			return out
		case err != nil:
			return []string{err.Error()}
		}
		return nil
	}
}

// pricesRequest is what --prices-out asks for.
type pricesRequest struct {
	path, today string
	bill        cost.Bill
	planArgs    []string
}

// ask builds the clients and runs the checks, and the prices step when asked; an error means
// Google's APIs could not be asked.
func ask(ctx context.Context, clientsFor ClientsFor, n Needs, prices *pricesRequest) ([]cmd.Finding, error) {
	clients, err := clientsFor(ctx, n.Project)
	if err != nil {
		return nil, err
	}
	findings, err := Run(ctx, clients, n)
	if err != nil || prices == nil {
		return findings, err
	}
	return append(findings, checkPrices(ctx, clients, n, prices.bill, prices.path, prices.today, prices.planArgs)), nil
}

// Write prints the findings as a table, each failure followed by its fix.
func Write(w io.Writer, stack string, n Needs, findings []cmd.Finding) {
	fmt.Fprintf(w, "preflight of stack %s: project %s, zone %s, %d × %s (%s); read-only\n", stack, n.Project, n.Zone, n.Nodes, n.MachineType, n.Provisioning)
	report.WriteTable(w, findings)
	failed, checks := 0, 0
	for _, f := range findings {
		// The prices step says nothing of whether up would work: its failure is its own line.
		if f.Name == CheckPrices {
			continue
		}
		checks++
		if f.Status == cmd.Failed {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(w, "%d of %d checks failed: pulumi up would fail on them\n", failed, checks)
	} else {
		fmt.Fprintln(w, "every check passed: the project is ready for pulumi up (capacity itself is known only when the nodes start)")
	}
	for _, f := range findings {
		if f.Name == CheckPrices && f.Status == cmd.Failed {
			fmt.Fprintln(w, "the price file was not written: see the prices line")
		}
	}
}

// cannotAskHint says what to do when Google's APIs could not be asked at all: a network that does
// not reach them (no route, no DNS) is no matter of credentials.
func cannotAskHint(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	if errors.As(err, &dns) || errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded) {
		return "Google's APIs do not answer from this machine (no network, DNS or a proxy in the way): preflight asks your project over the network; `go run . plan` checks the stack offline"
	}
	return "preflight reads with Application Default Credentials: `gcloud auth application-default login`"
}
