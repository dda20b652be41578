package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/runner/temporalrunner"
)

// runnerFlags choose where independent tasks run.
type runnerFlags struct {
	kind, address, queue, namespace, key string
	heartbeat                            time.Duration
}

func addRunnerFlags(fl *pflag.FlagSet, f *runnerFlags) {
	fl.StringVar(&f.kind, "runner", "local", "where the independent runs go: local (this process) or temporal (workers of --task-queue, see dptune worker; an interrupted invocation resumes when rerun with the same --out and settings, other settings start a new one with a fresh key)")
	addTemporalFlags(fl, f)
	fl.DurationVar(&f.heartbeat, "heartbeat-timeout", 30*time.Second, "temporal: a run whose worker is silent this long is retried on another worker")
}

func addTemporalFlags(fl *pflag.FlagSet, f *runnerFlags) {
	fl.StringVar(&f.address, "temporal-address", "127.0.0.1:7233", "temporal: host:port of the Temporal frontend")
	fl.StringVar(&f.queue, "task-queue", "dptune", "temporal: the task queue the workers serve")
	fl.StringVar(&f.namespace, "temporal-namespace", "default", "temporal: the namespace")
	fl.StringVar(&f.key, "temporal-key", defaultKeyFile(), "temporal: the curator's payload key file (64 hex digits, mode 0600; the curator creates it if missing, every worker needs a copy; the curator keeps its record of open invocations beside it, in FILE.open.json)")
}

func defaultKeyFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "temporal.key"
	}
	return filepath.Join(dir, "dptune", "temporal.key")
}

// check refuses bad runner flags before any work.
func (f runnerFlags) check(cmd *cobra.Command) error {
	switch f.kind {
	case "local":
		for _, n := range []string{"temporal-address", "task-queue", "temporal-namespace", "temporal-key", "heartbeat-timeout"} {
			if cmd.Flags().Changed(n) {
				return usagef("--%s needs --runner temporal", n)
			}
		}
	case "temporal":
		if f.queue == "" || f.address == "" {
			return usagef("--runner temporal needs --temporal-address and --task-queue")
		}
		if f.heartbeat < time.Second {
			return usagef("--heartbeat-timeout %v is below 1s", f.heartbeat)
		}
	default:
		return usagef("unknown --runner %q (want local or temporal)", f.kind)
	}
	return nil
}

// open returns the runner of one invocation of command (cmd, with its
// flags parsed) writing to out (nil for local: the job's own default) and
// end (never nil), to call when the invocation is over: it closes the
// invocation unless it was interrupted, so that a rerun with the same --out
// and the same settings attaches to it, and returns the error of closing.
//
// The workflow ID names the command, the absolute output directory and a
// digest of every other flag's value and of the search space, network spec
// and data files they name (settingsDigest), and the invocation's
// key is wrapped for that ID and the full digest: a second invocation into
// the same --out with any other setting is another workflow with a fresh
// key, never the first one's key.
func (f runnerFlags) open(ctx context.Context, cmd *cobra.Command, command, out string) (run runner.Runner, end func(interrupted bool) error, err error) {
	noop := func(bool) error { return nil }
	if f.kind != "temporal" {
		return nil, noop, nil
	}
	if err := os.MkdirAll(filepath.Dir(f.key), 0o700); err != nil {
		return nil, noop, err
	}
	if err := temporalrunner.CreateKey(f.key); err != nil {
		return nil, noop, err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, noop, err
	}
	settings := settingsDigest(cmd, command)
	c, codec, err := temporalrunner.Dial(temporalrunner.Options{Address: f.address, Namespace: f.namespace, TaskQueue: f.queue, KeyFile: f.key})
	if err != nil {
		return nil, noop, err
	}
	r, err := temporalrunner.Open(ctx, c, temporalrunner.OpenOptions{
		WorkflowID: fmt.Sprintf("dptune %s %s %x", command, abs, settings[:8]), TaskQueue: f.queue,
		Codec: codec, Settings: settings, Record: f.key + ".open.json", HeartbeatTimeout: f.heartbeat})
	if err != nil {
		c.Close()
		return nil, noop, err
	}
	return r, func(interrupted bool) error {
		var err error
		if !interrupted {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if cerr := r.Close(cctx); cerr != nil {
				err = fmt.Errorf("closing %s: %w", r.WorkflowID(), cerr)
			}
			cancel()
		}
		c.Close()
		return err
	}, nil
}

// runnerFlagNames are the flags that say where the tasks run, not what they
// compute: left out of the settings' digest.
var runnerFlagNames = map[string]bool{"runner": true, "temporal-address": true, "task-queue": true,
	"temporal-namespace": true, "temporal-key": true, "heartbeat-timeout": true}

// settingsDigest is SHA-256 of command and every flag of cmd but the
// runner's, each as its name and value (defaults included, so that a
// changed default is another setting), in name order, and of what the
// files the flags name hold: for --space and --model, when they name a
// file, SHA-256 of its content (an edited search space or network spec is
// another setting); for --data-dir and --public-val-dir, the directory's
// absolute path and the name, size and modification time of each regular
// file directly in it (the data files are too large to hash at every
// start: rewriting one changes its size or time). A file that cannot be
// read adds its error, so that it never matches a readable one.
func settingsDigest(cmd *cobra.Command, command string) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%q\n", command)
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if runnerFlagNames[fl.Name] {
			return
		}
		v := fl.Value.String()
		fmt.Fprintf(h, "%q=%q\n", fl.Name, v)
		switch {
		case v == "":
		case fl.Name == "space" || fl.Name == "model":
			if st, err := os.Stat(v); err == nil && st.Mode().IsRegular() {
				fmt.Fprintf(h, "  content %s\n", fileDigest(v))
			}
		case fl.Name == "data-dir" || fl.Name == "public-val-dir":
			fmt.Fprintf(h, "  files %s\n", dirDigest(v))
		}
	})
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

// describe says where the runs go, for the curator's terminal.
func describeRunner(r runner.Runner) string {
	if t, ok := r.(*temporalrunner.Runner); ok {
		s := "temporal workflow " + t.WorkflowID()
		if t.Resumed() {
			s += " (resumed: finished runs are not run again)"
		}
		return s
	}
	return "this process"
}

type workerFlags struct {
	runnerFlags
	concurrency  int
	dataDir      string
	featureCache string
}

func newWorkerCmd() *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run tuning, bench and audit tasks for curators using --runner temporal",
		Long: `worker serves a Temporal task queue: it runs the invocation workflows and
the tasks (DP-SGD runs, partition runs, blocks of audit trials) that
` + "`dptune tune|bench tuners|audit --runner temporal`" + ` submit, and heartbeats
their progress (step counts only), so that a task whose worker dies is retried
on another. Every payload and failure is sealed with the curator's key file
(--temporal-key), which every worker needs a copy of, and bound to its
workflow, run and role; a payload that is not sealed is refused.

The worker reads the data itself: MNIST from the Go module cache (as the
curator does), CIFAR-10 or an image folder (--dataset folder) from
--data-dir (default: the directory the curator named), with the curator's
settings (an image folder's shape, resizing and --mean/--std travel in the
task), and computes the features of a network with a scatter front end
once per dataset into --feature-cache. Every task names its data by a
digest of the curator's copy, keyed with the invocation's secret key and
sealed with the task: a worker whose copy differs (another folder, a file
changed since) fails the task at once with one line saying so, without
saying how it differs, and a copy it had kept in memory is read again from
its files first. Run it where the data is; stop it with Ctrl-C.`,
		Example: `  dptune worker --temporal-address 127.0.0.1:7233 --task-queue dptune
  dptune worker --task-queue dptune --data-dir /data/cifar-10-batches-bin
  dptune worker --task-queue dptune --data-dir /data/photos   # a copy of the curator's image folder`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWorker(cmd, f) },
	}
	fl := cmd.Flags()
	addTemporalFlags(fl, &f.runnerFlags)
	fl.IntVar(&f.concurrency, "concurrency", min(64, runtime.GOMAXPROCS(0)), "tasks run at once, each with an equal share of the cores (each DP-SGD engine gets max(1, cores/concurrency) workers)")
	fl.StringVar(&f.dataDir, "data-dir", "", "the directory on this machine of the datasets that have no default one ("+strings.Join(job.DatasetsWithoutDefaultDir(), ", ")+", or an image folder: --dataset "+job.FolderName+"), instead of the curator's; a copy that differs from the curator's is refused")
	fl.StringVar(&f.featureCache, "feature-cache", job.DefaultFeatureCache(), "directory on this machine keeping the features of a network with a scatter front end, computed once per dataset (they are the private data, transformed: created 0700, files 0600); empty: compute them in memory once per worker process")
	return cmd
}

func runWorker(cmd *cobra.Command, f workerFlags) error {
	if f.concurrency < 1 || f.concurrency > 64 {
		return usagef("--concurrency %d is outside [1, 64]", f.concurrency)
	}
	if f.dataDir != "" {
		if st, err := os.Stat(f.dataDir); err != nil || !st.IsDir() {
			return usagef("--data-dir %s is not a directory", f.dataDir)
		}
		job.WorkerDataDirs(f.dataDir)
	}
	job.WorkerFeatureCache(f.featureCache)
	c, _, err := temporalrunner.Dial(temporalrunner.Options{Address: f.address, Namespace: f.namespace, TaskQueue: f.queue, KeyFile: f.key})
	if err != nil {
		return err
	}
	defer c.Close()
	w := temporalrunner.NewWorker(c, f.queue, f.concurrency, cmd.ErrOrStderr())
	if err := w.Start(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "worker serving task queue %s at %s (task kinds: %v); Ctrl-C stops it\n", f.queue, f.address, runner.Kinds())
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	w.Stop()
	return nil
}
