package job

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/tuning"
)

// VoteHooks are what serving a vote tells its caller as it goes
// (curator-side); each may be nil.
type VoteHooks struct {
	// Warn receives curator-side warnings, once every check has passed
	// and the test set is read, before the listener opens.
	Warn func(string)
	// Started is told the vote once its server listens, before any client
	// starts.
	Started func(VoteStart)
	// Progress receives the server's events.
	Progress func(federated.Event)
	// ClientFailed is told a failed exit of a client this machine started
	// (with the directory of the clients' logs) when the vote itself did
	// not fail.
	ClientFailed func(err error, logs string)
}

// VoteStart describes a vote whose server listens, before any client
// starts.
type VoteStart struct {
	Addr    net.Addr
	Dataset string // the data's name (Source.Name)
	// Space and Candidates are the search space's name and size; Clients
	// vote for VotesPerClient candidates each, with noise of standard
	// deviation NoiseStddev votes in all, at client-level VoteEpsilon.
	Space                    string
	Candidates, Clients      int
	VotesPerClient           int
	NoiseStddev, VoteEpsilon float64
	Final                    string // federated.FinalDPSGD, FinalDPFedAvg or FinalNonPrivate
	FinalNoiseMultiplier     float64
	Rounds, StepsPerRound    int
	Threshold, Colluding     int  // the secure sums' threshold t of Clients, c colluding clients
	Insecure                 bool // plaintext on loopback (VoteTransport.Insecure)
}

// voteTLSDir is where a vote whose clients this machine starts keeps its
// throwaway CA, inside its Out.
const voteTLSDir = "vote-tls"

// TuneVote runs r, a tuning by the federated tuner t whose clients are
// this machine's processes (dptune tune --tuner vote): exe's `vote client`
// command (VoteClientArgs), started once the job is planned over mutual
// TLS with a throwaway CA in Out/vote-tls, their logs in Out/clients. It
// refuses the settings such a vote does not take (the DP-SGD runs', the
// default among the candidates, the selection share) and marks Out
// (MarkVoteTuning), so that a resume after a kill says a vote cannot be
// resumed; then it serves the vote as ServeVote does.
func (r *TuneRequest) TuneVote(ctx context.Context, t TunerInfo, exe string, data func() (Source, error), h VoteHooks) (*Release, error) {
	for _, n := range []string{"include-default", "default-weight", "default-settings", "default-source", "selection-share", "subsample"} {
		if r.Given[n] {
			return nil, invalidf("--%s is not a --tuner %s option", n, t.Name)
		}
	}
	allowed := map[string]bool{"tuner": true, "epsilon": true, "delta": true, "space": true, "batch-size": true, "seed": true, "out": true,
		"dataset": true, "data-dir": true, "model": true, "nominal-size": true}
	for _, o := range t.Options {
		allowed[o.Name] = true
	}
	for _, n := range r.Given.names() {
		if !allowed[n] {
			return nil, invalidf("--%s is not a --tuner %s option", n, t.Name)
		}
	}
	options, err := r.OptionValues(t)
	if err != nil {
		return nil, err
	}
	end, err := MarkVoteTuning(r.Out, t.Name)
	if err != nil {
		return nil, err
	}
	rel, err := r.serveVote(ctx, options, data, "127.0.0.1:0", exe, h)
	end(err)
	return rel, err
}

// ServeVote serves the vote of r (the vote tuner's options, dptune vote
// serve) on listen to clients started elsewhere, until the last FedAvg
// round: it checks r, plans the vote (PlanVote), checks its transport and
// Out and reads the test set — refusing a missing or unreadable data
// directory before any client joins — then listens and runs it (RunVote).
// A budget file is refused: the vote's ledger is partly client-level.
// Errors before the listener opens wrap ErrInvalid.
func (r *TuneRequest) ServeVote(ctx context.Context, listen string, data func() (Source, error), h VoteHooks) (*Release, error) {
	t, _ := TunerInfoOf(tuning.VoteName)
	options, err := r.OptionValues(t)
	if err != nil {
		return nil, err
	}
	return r.serveVote(ctx, options, data, listen, "", h)
}

// serveVote serves the vote of r with the vote tuner's options on
// listen; its clients are processes of exe on this machine, or with exe
// "" clients started elsewhere.
func (r *TuneRequest) serveVote(ctx context.Context, options map[string]any, data func() (Source, error), listen, exe string, h VoteHooks) (*Release, error) {
	spec, err := r.voteSpec(options, data)
	if err != nil {
		return nil, err
	}
	plan, err := PlanVote(ctx, spec)
	if err != nil {
		return nil, err
	}
	if exe == "" {
		if err := spec.Transport.CheckServer(listen); err != nil {
			return nil, err
		}
	}
	if err := CheckOut(r.Out); err != nil {
		return nil, err
	}
	// The server evaluates on the test set; reading the data now also
	// refuses a missing or unreadable data directory before the clients
	// start (they read the same files).
	if _, spec.Test, err = spec.Data.Load(); err != nil {
		return nil, invalidf("--dataset %s --data-dir %q: %v", spec.Data.Name, spec.Data.Dir, err)
	}
	if b := plan.Mechanism.BestCaseGoodSelection(); b < 0.5 && h.Warn != nil {
		m := plan.Mechanism
		h.Warn(fmt.Sprintf("near-random selection: even if all %d clients voted for the same %d good candidates, DP-Hype's Theorem V.1 guarantees a good one only with probability %.2f (vote noise σ = %.1f votes against %d votes; %d other candidates); more clients, fewer candidates or a larger --vote-epsilon raise it",
			m.Clients, m.VotesPerClient, b, m.NoiseStddev, m.Clients, m.Candidates-m.VotesPerClient))
	}
	if exe != "" {
		if spec.Transport, err = throwawayCA(r.Out, plan.Clients); err != nil {
			return nil, err
		}
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, invalidf("--listen %s: %v", listen, err)
	}
	if h.Started != nil {
		h.Started(VoteStart{Addr: lis.Addr(), Dataset: spec.Data.Name, Space: plan.Space.Name, Candidates: plan.Space.Size(), Clients: plan.Clients,
			VotesPerClient: plan.Mechanism.VotesPerClient, NoiseStddev: plan.Mechanism.NoiseStddev, VoteEpsilon: spec.VoteEpsilon,
			Final: plan.Final.Mode, FinalNoiseMultiplier: plan.Final.NoiseMultiplier, Rounds: plan.Final.Rounds, StepsPerRound: plan.Final.StepsPerRound,
			Threshold: plan.Threshold, Colluding: plan.Colluding, Insecure: spec.Transport.Insecure})
	}
	spec.Progress = h.Progress
	if exe == "" {
		return RunVote(ctx, spec, lis)
	}
	return r.tuneVoteClients(ctx, spec, lis, exe, plan.Clients, h)
}

// voteSpec is the vote of r with the vote tuner's options: its settings,
// round deadlines, data, transport and space, checked before the vote is
// planned. A budget file is refused.
func (r *TuneRequest) voteSpec(options map[string]any, data func() (Source, error)) (VoteSpec, error) {
	if r.Budget != "" {
		return VoteSpec{}, invalidf("--budget: the vote's ledger is partly client-level; a budget file counts example-level runs only")
	}
	seed := r.Seed
	spec, err := VoteSpecOf(TuneSpec{Tuner: tuning.VoteName, Epsilon: r.Epsilon, Delta: r.Delta, BatchSize: r.BatchSize, Seed: &seed, Options: options})
	if err != nil {
		return spec, err
	}
	if spec.TrainingTimeout <= 0 {
		return spec, invalidf("--round-timeout %v must be positive", spec.TrainingTimeout)
	}
	if spec.MessageTimeout <= 0 {
		return spec, invalidf("--message-timeout %v must be positive", spec.MessageTimeout)
	}
	if spec.Data, err = data(); err != nil {
		return spec, err
	}
	spec.Transport = r.Transport
	if spec.Space, err = LoadVoteSpace(r.Space); err != nil {
		return spec, invalid(err)
	}
	return spec, nil
}

// tuneVoteClients runs the vote spec through Tune, the front door of every
// tuner, serving it on lis to n clients that are processes of exe on this
// machine, started once the job is planned (logging to Out/clients); a
// client's failed exit is told to h.ClientFailed when the tuning itself
// did not fail.
func (r *TuneRequest) tuneVoteClients(ctx context.Context, spec VoteSpec, lis net.Listener, exe string, n int, h VoteHooks) (*Release, error) {
	logs := filepath.Join(r.Out, "clients")
	var exits []error
	ts := spec.TuneSpec()
	ts.Federation.Listener = lis
	ts.Federation.Launch = func(ctx context.Context, server string) (func(), error) {
		procs, err := startVoteClients(ctx, exe, spec, server, logs, n, filepath.Join(r.Out, voteTLSDir))
		return func() {
			for _, p := range procs {
				exits = append(exits, p.Wait())
			}
		}, err
	}
	rel, _, err := Tune(ctx, ts)
	for _, werr := range exits {
		if werr != nil && err == nil && h.ClientFailed != nil {
			h.ClientFailed(werr, logs)
		}
	}
	return rel, err
}

// throwawayCA writes a fresh CA, server and n client certificates into
// out/voteTLSDir — without the CA's key, so no certificate can be added —
// and returns the server's transport.
func throwawayCA(out string, n int) (VoteTransport, error) {
	dir := filepath.Join(out, voteTLSDir)
	if err := os.RemoveAll(dir); err != nil {
		return VoteTransport{}, err
	}
	if err := federated.GenerateCerts(dir, n, nil, false); err != nil {
		return VoteTransport{}, fmt.Errorf("making the vote's throwaway CA: %w", err)
	}
	return VoteTransport{Cert: filepath.Join(dir, "server.pem"), Key: filepath.Join(dir, "server.key"), CA: filepath.Join(dir, "ca.pem")}, nil
}

// startVoteClients starts n client processes of exe for server (of the
// vote v), logging to dir/client-i.log, client i with certs/client-i.pem.
// They stop with ctx.
func startVoteClients(ctx context.Context, exe string, v VoteSpec, server, dir string, n int, certs string) ([]*exec.Cmd, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var procs []*exec.Cmd
	for i := range n {
		p := exec.CommandContext(ctx, exe, VoteClientArgs(v, server, i+1, n, certs)...)
		log, err := os.Create(filepath.Join(dir, "client-"+strconv.Itoa(i+1)+".log"))
		if err != nil {
			return procs, err
		}
		p.Stdout, p.Stderr = log, log
		err = p.Start()
		log.Close() // the child holds its own descriptor
		if err != nil {
			return procs, fmt.Errorf("starting client %d: %w", i+1, err)
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// VoteClientArgs are the command-line arguments of client i of n of the
// vote v as a `dptune vote client` process for server: its share, its
// certificate in certs, its data (v.Data's dataset, directory and feature
// cache), and the curator's own ε, δ and colluding clients as the
// client's limits (with --allow-non-private if the curator chose a
// non-private final training).
func VoteClientArgs(v VoteSpec, server string, i, n int, certs string) []string {
	args := []string{tuning.VoteName, "client", "--server", server, "--dataset", v.Data.Input.Dataset, "--part", fmt.Sprintf("%d/%d", i, n),
		"--tls-cert", filepath.Join(certs, fmt.Sprintf("client-%d.pem", i)), "--tls-key", filepath.Join(certs, fmt.Sprintf("client-%d.key", i)),
		"--ca", filepath.Join(certs, "ca.pem"),
		"--max-epsilon", strconv.FormatFloat(v.Epsilon, 'g', -1, 64), "--max-delta", strconv.FormatFloat(v.Delta, 'g', -1, 64),
		"--colluding", strconv.Itoa(v.Colluding)}
	if v.FinalTraining == federated.FinalNonPrivate {
		args = append(args, "--allow-non-private")
	}
	if v.Data.Dir != "" {
		args = append(args, "--data-dir", v.Data.Dir)
	}
	if v.Data.Features.Dir != DefaultFeatureCache() {
		args = append(args, "--feature-cache", v.Data.Features.Dir)
	}
	return args
}

// VoteClientRequest is a vote client as a person asks for it (the flags
// of dptune vote client, whose names the errors speak): the server's
// address, its share Part "i/n" ("": the one its certificate binds, or
// over an insecure transport the next free one), its transport and limits.
type VoteClientRequest struct {
	Server, Part string
	Transport    VoteTransport
	Limits       federated.Limits
}

// Join checks r, reads the client's data with data, and takes part in the
// vote at Server until its end (VoteClient). A request that cannot join
// is refused before the client connects, with an error wrapping
// ErrInvalid that names the flag at fault: no server, a malformed share, a
// transport that cannot reach the server (VoteTransport.CheckClient),
// invalid limits.
func (r VoteClientRequest) Join(ctx context.Context, data func() (Source, error), progress func(stage string, done, total int)) (federated.ClientReport, error) {
	if r.Server == "" {
		return federated.ClientReport{}, invalidf("--server is required")
	}
	i, n, err := parsePart(r.Part)
	if err != nil {
		return federated.ClientReport{}, err
	}
	if err := r.Transport.CheckClient(r.Server, i); err != nil {
		return federated.ClientReport{}, err
	}
	src, err := data()
	if err != nil {
		return federated.ClientReport{}, err
	}
	lim := r.Limits
	if err := lim.Valid(); err != nil {
		return federated.ClientReport{}, invalidf("--max-epsilon %v, --max-delta %v, --colluding %d: %v", lim.MaxEpsilon, lim.MaxDelta, lim.Colluding, err)
	}
	return VoteClient(ctx, r.Server, r.Transport, src, i, n, lim, progress)
}

// parsePart parses a share "i/n"; "" is 0/0 (any share).
func parsePart(s string) (i, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 2 || n > 255 || i < 1 || i > n {
		return 0, 0, invalidf("--part %q: want i/n with 1 ≤ i ≤ n and 2 ≤ n ≤ 255", s)
	}
	return i, n, nil
}

// VoteCertsRequest is a vote's certificates as a person asks for them (the
// flags of dptune vote certs): a CA, the server's certificate (for
// localhost and Hosts) and Clients clients', written into Out.
type VoteCertsRequest struct {
	Out     string
	Clients int
	Hosts   []string
	// Force replaces the certificates and keys already in Out; without
	// it, Out holding any of them is refused.
	Force bool
}

// Write checks r and writes the CA (its key kept), the server's and each
// client's certificate and key into Out (federated.GenerateCerts). It
// refuses, before anything is written, with an error wrapping ErrInvalid
// that names the flag at fault: a client count outside 2 … 255, no Out, an
// empty host name, an Out holding a certificate or key without Force, an
// unwritable Out.
func (r VoteCertsRequest) Write() error {
	if r.Clients < 2 || r.Clients > 255 {
		return invalidf("--clients %d: need 2 … 255", r.Clients)
	}
	if r.Out == "" {
		return invalidf("--out is required")
	}
	for _, h := range r.Hosts {
		if h == "" {
			return invalidf("--host: empty name")
		}
	}
	if !r.Force {
		for _, name := range federated.CertFiles(r.Clients, true) {
			if _, err := os.Lstat(filepath.Join(r.Out, name)); err == nil {
				return invalidf("%s already holds %s: choose another --out, or --force to replace every certificate and key", r.Out, name)
			}
		}
	}
	if err := CheckOut(r.Out); err != nil {
		return err
	}
	return federated.GenerateCerts(r.Out, r.Clients, r.Hosts, true)
}
