package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/tuning"
)

// addTransportFlags adds the TLS flags of vote serve and vote client.
func addTransportFlags(fl *pflag.FlagSet, t *job.VoteTransport, side string) {
	fl.StringVar(&t.Cert, "tls-cert", "", "PEM certificate of this "+side+", issued by --ca (dptune vote certs writes them)")
	fl.StringVar(&t.Key, "tls-key", "", "PEM private key of --tls-cert")
	fl.StringVar(&t.CA, "ca", "", "PEM certificate of the curator's CA: mutual TLS, and the clients' signing certificates")
	fl.BoolVar(&t.Insecure, "insecure", false, "plaintext gRPC without certificates, on a loopback address only (the secure sum then withstands a semi-honest server only)")
}

// serveVote serves the vote of f on listen to clients started elsewhere
// (vote serve), or, for the federated tuner t (tune --tuner vote), to
// clients that are this program's processes; it prints the plan, the
// progress and the release.
func serveVote(cmd *cobra.Command, f tuneFlags, listen string, t *job.TunerInfo) error {
	start := time.Now()
	w := cmd.ErrOrStderr()
	rounds := 0
	h := job.VoteHooks{Warn: warner(w), Progress: voteProgress(w, &rounds), Started: func(v job.VoteStart) {
		rounds = v.Rounds
		fmt.Fprintf(w, "DP-Hype on %s: %d clients vote ℓ = %d of %d candidates (%s), vote noise σ = %.3f votes (client-level ε = %g), final training %s (σ = %.4f, %d rounds × %d steps)\n",
			v.Dataset, v.Clients, v.VotesPerClient, v.Candidates, v.Space, v.NoiseStddev, v.VoteEpsilon, v.Final, v.FinalNoiseMultiplier, v.Rounds, v.StepsPerRound)
		auth := "mutual TLS, signed keys and U3 (withstands an active server)"
		if v.Insecure {
			auth = "plaintext on loopback, unauthenticated (withstands a semi-honest server only)"
		}
		fmt.Fprintf(w, "secure sum: threshold t = %d of %d (2t > n + c, c = %d colluding), %s\n", v.Threshold, v.Clients, v.Colluding, auth)
		if t == nil {
			how := "--tls-cert client-<i>.pem --tls-key client-<i>.key --ca ca.pem"
			if v.Insecure {
				how = "--insecure"
			}
			fmt.Fprintf(w, "listening on %s for %d clients: dptune vote client --server %s --dataset %s %s\n", v.Addr, v.Clients, v.Addr, f.data.dataset, how)
		}
	}, ClientFailed: func(err error, logs string) { fmt.Fprintf(w, "a client exited with %v (see %s)\n", err, logs) }}
	data := func() (job.Source, error) { return f.data.source(cmd) }
	var rel *job.Release
	var err error
	if t != nil {
		exe, xerr := os.Executable()
		if xerr != nil {
			return xerr
		}
		rel, err = f.TuneVote(cmd.Context(), *t, exe, data, h)
	} else {
		rel, err = f.ServeVote(cmd.Context(), listen, data, h)
	}
	return printVoteRelease(cmd, f.Out, rel, err, rounds, start)
}

// voteProgress prints the vote's progress to w: clients joining and
// dropping, the secure sums' rounds, the winner and the FedAvg rounds (of
// *rounds).
func voteProgress(w io.Writer, rounds *int) func(federated.Event) {
	return func(e federated.Event) {
		switch e.Stage {
		case "joined":
			fmt.Fprintf(w, "client %d joined\n", e.Client)
		case "dropped":
			fmt.Fprintf(w, "client %d dropped (%d live)\n", e.Client, e.Live)
		case "keys", "shares":
			if e.Round == 0 {
				fmt.Fprintf(w, "secure sum: round %s closed with %d live clients\n", e.Stage, e.Live)
			}
		case "masked":
			if e.Round == 0 {
				fmt.Fprintf(w, "secure sum: noisy votes in from %d clients; unmasking\n", e.Live)
			} else {
				fmt.Fprintf(w, "FedAvg round %d: noisy updates in from %d clients; unmasking\n", e.Round, e.Live)
			}
		case "winner":
			fmt.Fprintf(w, "winner: candidate %d; FedAvg starts\n", e.Winner)
		case "round":
			fmt.Fprintf(w, "FedAvg round %d/%d done\n", e.Round, *rounds)
		}
	}
}

// printVoteRelease saves the vote's release (rel, and err, the vote's
// error) in out — a failed one's ledger alone — and prints the winner, the
// federated model's test accuracy after rounds FedAvg rounds, the ε and
// the traffic; the wall time since start goes to stderr.
func printVoteRelease(cmd *cobra.Command, out string, rel *job.Release, err error, rounds int, start time.Time) error {
	if rel != nil && rel.Failed {
		if serr := rel.Save(out); serr != nil {
			return errors.Join(err, serr)
		}
		return fmt.Errorf("%w (nothing more released; the ledger of what reached the clients is in %s)", err, filepath.Join(out, "failed-report.json"))
	}
	if err != nil {
		return err
	}
	if err := rel.Save(out); err != nil {
		return err
	}
	rep := rel.Report.(*job.VoteReport)
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "winner         %v\n", rep.Selected)
	fmt.Fprintf(w, "test accuracy  %.2f%% (federated model, %d FedAvg rounds)\n", 100*rep.TestAccuracy, rounds)
	switch {
	case rep.Epsilon != nil && rep.EpsilonLevel == "client":
		fmt.Fprintf(w, "ε (client)     %.3f at δ = %g: vote + DP-FedAvg, RDP, client-level (so also example-level)\n", *rep.Epsilon, rep.Delta)
	case rep.Epsilon != nil:
		fmt.Fprintf(w, "ε (example)    %.3f at δ = %g: vote + final training, RDP\n", *rep.Epsilon, rep.Delta)
	default:
		fmt.Fprintf(w, "ε (example)    unbounded: the final training is not private\n")
	}
	fmt.Fprintf(w, "vote ε         %.3f at δ = %g, client-level (replace one client), %d of %d clients in the sum\n", rep.VoteEpsilon, rep.Delta, rep.Survivors, rep.Clients)
	fmt.Fprintf(w, "model_private  %v\n", rep.ModelPrivate)
	fmt.Fprintf(w, "bytes sent     %d per client at most (%d in all, gRPC payloads)\n", rep.Traffic.MaxSent, rep.Traffic.TotalSent)
	fmt.Fprintf(cmd.ErrOrStderr(), "wall time      %.1f s; report in %s\n", time.Since(start).Seconds(), filepath.Join(out, "report.json"))
	return nil
}

// newVoteCmd is dptune vote: the DP-Hype server and client on their own,
// for clients on other machines.
func newVoteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   tuning.VoteName,
		Short: "DP-Hype's server and client as separate processes (dptune tune --tuner vote runs both on one machine)",
	}
	cmd.AddCommand(newVoteServeCmd(), newVoteClientCmd(), newVoteCertsCmd())
	return cmd
}

// newVoteServeCmd is the DP-Hype server waiting for clients started elsewhere.
func newVoteServeCmd() *cobra.Command {
	var f tuneFlags
	var listen string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve one DP-Hype vote and FedAvg of the winner to --clients clients",
		Long: `serve plans the vote (the same flags as dptune tune --tuner vote), listens on
--listen, and waits for --clients processes of dptune vote client to join; it
saves the release in --out when the last FedAvg round is done. A client
silent past a round's deadline (--round-timeout for rounds with local
training, --message-timeout for the others) is a dropout; if fewer than
⌈(1−f)n⌉ remain, nothing more is released and the ledger of what reached
the clients goes to failed-report.json. The transport
is mutual TLS: --tls-cert and --tls-key are the server's, --ca the curator's
CA, and every client must present a certificate from that CA, which binds
its client ID and signs its secure-sum messages (dptune vote certs writes
them all). --insecure (plaintext, no certificates) is allowed on a loopback
address only; the secure sum then withstands a semi-honest server only.`,
		Example: `  dptune vote certs --out certs --clients 5 --host vote.example.org
  dptune vote serve --listen 0.0.0.0:7070 --clients 5 --epsilon 3 --out out/vote \
      --tls-cert certs/server.pem --tls-key certs/server.key --ca certs/ca.pem
  dptune vote client --server vote.example.org:7070 --dataset mnist \
      --tls-cert certs/client-1.pem --tls-key certs/client-1.key --ca certs/ca.pem   # client i on machine i`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.request(cmd)
			return serveVote(cmd, f, listen, nil)
		},
	}
	fl := cmd.Flags()
	addDataFlags(fl, &f.data)
	fl.StringVar(&listen, "listen", "127.0.0.1:7070", "address to serve on (HOST:PORT)")
	fl.Float64Var(&f.Epsilon, "epsilon", 3, "total example-level ε of vote and final training")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "total δ")
	fl.StringVar(&f.Space, "space", "", "search space: a .json file (default: mnist-vote, 24 candidates)")
	fl.IntVar(&f.BatchSize, "batch-size", 256, "expected batch size of local training")
	fl.Uint64Var(&f.Seed, "seed", 0, "public seed of the split and the initial parameters")
	fl.StringVar(&f.Out, "out", "out/vote", "where the model and report.json go")
	f.options = addTunerFlags(fl, tuning.VoteName)
	addTransportFlags(fl, &f.Transport, "server")
	return cmd
}

// newVoteClientCmd is one DP-Hype client process.
func newVoteClientCmd() *cobra.Command {
	var d dataFlags
	r := job.VoteClientRequest{Limits: federated.Limits{MaxEpsilon: federated.DefaultMaxEpsilon, MaxDelta: federated.DefaultMaxDelta}}
	lim, tr := &r.Limits, &r.Transport
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Run one DP-Hype client (dptune tune --tuner vote starts them on this machine)",
		Long: `Joins the DP-Hype server at --server as one client holding --dataset's
training data (its share is dealt by the server's public split; --part i/n
names which; over TLS, by default the one its certificate binds), trains
every candidate locally, sends its masked noisy vote, and takes part in
FedAvg. Its certificate (--tls-cert, from the CA --ca) authenticates it to
the server and signs its secure-sum keys and survivor set; it checks every
other client's certificate and signatures itself. --insecure (loopback
only) drops the certificates.

The server chooses the job, so the client checks it against its own
limits before it loads its data: it recomputes the job's total ε (the vote
at its fewest survivors composed with the final training, RDP accountant,
at δ = --max-delta) and refuses more than --max-epsilon (default 10), a job
assuming fewer colluding clients than --colluding (or a threshold below
what they need), and a non-private final training unless
--allow-non-private. A refused job ends the client with one line, exit
status 2, before it sends anything derived from its data.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.ErrOrStderr()
			rep, err := r.Join(cmd.Context(), func() (job.Source, error) { return d.source(cmd) }, func(stage string, done, total int) {
				fmt.Fprintf(w, "%s %d/%d\n", stage, done, total)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "client %d (%d examples): winner %d\n", rep.ID, rep.Examples, rep.Winner)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&r.Server, "server", "", "address of the DP-Hype server (HOST:PORT)")
	fl.StringVar(&d.dataset, "dataset", "mnist", "dataset: mnist or cifar10")
	fl.StringVar(&d.dataDir, "data-dir", "", "directory of the dataset's files")
	fl.StringVar(&d.featureCache, "feature-cache", job.DefaultFeatureCache(), "directory keeping the features of a job's network with a scatter front end, computed once per dataset (they are this client's private data, transformed: created 0700, files 0600); empty: compute them on every run")
	fl.StringVar(&r.Part, "part", "", "i/n: this client holds share i (1 … n) of the server's n-way split and joins as that client (default: its certificate's, or with --insecure the next free share)")
	fl.Float64Var(&lim.MaxEpsilon, "max-epsilon", federated.DefaultMaxEpsilon, "the largest total ε (vote + final training, at --max-delta, recomputed by this client) of a job this client takes part in")
	fl.Float64Var(&lim.MaxDelta, "max-delta", federated.DefaultMaxDelta, "the δ at which this client computes the job's ε")
	fl.IntVar(&lim.Colluding, "colluding", 0, "c, the clients this client assumes may collude with the server: a job assuming fewer, or with a threshold t < max(⌊(n+c)/2⌋+1, 2), is refused")
	fl.BoolVar(&lim.AllowNonPrivate, "allow-non-private", false, "take part in a job whose final training is non-private (the model is NOT private; the vote alone must meet --max-epsilon)")
	addTransportFlags(fl, tr, "client")
	return cmd
}
