package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dptune/dptune/data"
)

// realMNISTSubset writes the first n training and n/4 test examples of the
// real MNIST files (the GoMNIST module's) to a new directory.
func realMNISTSubset(t *testing.T, n int) string {
	t.Helper()
	src, err := data.MNISTDir()
	if err != nil {
		t.Skip("no MNIST files:", err)
	}
	dir := t.TempDir()
	cut := func(name string, count int) {
		f, err := os.Open(filepath.Join(src, name+".gz"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(z)
		if err != nil {
			t.Fatal(err)
		}
		head, size := 8, 1
		if binary.BigEndian.Uint32(b) == 2051 {
			head, size = 16, 28*28
		}
		out := append([]byte(nil), b[:head+count*size]...)
		binary.BigEndian.PutUint32(out[4:], uint32(count))
		if err := os.WriteFile(filepath.Join(dir, name), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cut("train-images-idx3-ubyte", n)
	cut("train-labels-idx1-ubyte", n)
	cut("t10k-images-idx3-ubyte", n/4)
	cut("t10k-labels-idx1-ubyte", n/4)
	return dir
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// logBuf is a process's stderr, safe to read while it grows.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lines returns the lines of l that start with prefix.
func (l *logBuf) lines(prefix string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			out = append(out, sc.Text())
		}
	}
	return out
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out after %v waiting for %s", d, what)
}

// TestTemporalIntegration runs a seeded random-stop tuning on a real MNIST
// subset through a Temporal dev server (bin/temporal, `make temporal`) and
// two `dptune worker` processes. It SIGKILLs the worker running the first
// job mid-run, so that job is retried on the other worker, and then
// SIGKILLs the curator (`dptune tune`) once a job has finished; a new
// curator with the same --out attaches to the same workflow and finishes
// the run without running any finished job again. The release and the
// ledger must equal those of the same seeded tuning with --runner local.
func TestTemporalIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	temporal, err := filepath.Abs("../../bin/temporal")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(temporal); err != nil {
		t.Skip("bin/temporal is absent: `make temporal` builds the Temporal CLI")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	server := exec.CommandContext(ctx, temporal, "server", "start-dev", "--ip", "127.0.0.1", "--port", fmt.Sprint(port), "--headless",
		"--db-filename", filepath.Join(dir, "temporal.db"), "--log-level", "error")
	var serverLog logBuf
	server.Stdout, server.Stderr = &serverLog, &serverLog
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	waitFor(t, "the Temporal dev server", time.Minute, func() bool {
		return exec.CommandContext(ctx, temporal, "operator", "cluster", "health", "--address", addr).Run() == nil
	})

	key := filepath.Join(dir, "key")
	mnist := realMNISTSubset(t, 2400)
	space := filepath.Join(dir, "space.json")
	os.WriteFile(space, []byte(`{"name": "small", "dims": [
		{"name": "learning_rate", "values": [0.5, 1], "log": true},
		{"name": "clip_norm", "values": [0.5, 1]}]}`), 0o644)
	dptune := func(log *logBuf, args ...string) *exec.Cmd {
		p := exec.CommandContext(ctx, os.Args[0], args...)
		p.Env = append(os.Environ(), "DPTUNE_TEST_MAIN=1")
		p.Stdout, p.Stderr = log, log
		return p
	}
	temporalFlags := []string{"--temporal-address", addr, "--task-queue", "it", "--temporal-key", key}
	tuneArgs := func(out string) []string {
		return []string{"tune", "--tuner", "randomstop", "--dataset", "mnist", "--data-dir", mnist, "--nominal-size", "2400",
			"--val-size", "400", "--batch-size", "64", "--space", space, "--epochs", "1", "--mean-runs", "4", "--epsilon", "8",
			"--seed", "5", "--out", out}
	}
	// Bad input is refused before the cluster is contacted.
	if code, text := run(t, append([]string{"tune", "--tuner", "randomstop", "--epsilon", "-1", "--runner", "temporal"}, temporalFlags...)...); code != 2 {
		t.Fatalf("a bad budget with --runner temporal: exit %d: %s", code, text)
	}
	// The curator would create the key file; the workers need it first.
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var workerLogs [2]logBuf
	workers := make([]*exec.Cmd, 2)
	for i := range workers {
		workers[i] = dptune(&workerLogs[i], append([]string{"worker"}, temporalFlags...)...)
		if err := workers[i].Start(); err != nil {
			t.Fatal(err)
		}
		defer func(p *exec.Cmd) { p.Process.Kill(); p.Wait() }(workers[i])
	}

	out := filepath.Join(dir, "temporal")
	args := append(tuneArgs(out), append([]string{"--runner", "temporal", "--heartbeat-timeout", "2s"}, temporalFlags...)...)
	var curatorLog logBuf
	curator := dptune(&curatorLog, args...)
	if err := curator.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill the worker that took the first job, while it runs it.
	victim := -1
	waitFor(t, "a worker to start a job", time.Minute, func() bool {
		for i := range workerLogs {
			if len(workerLogs[i].lines("running ")) > 0 {
				victim = i
				return true
			}
		}
		return false
	})
	killedJob := strings.Fields(workerLogs[victim].lines("running ")[0])[1:3]
	workers[victim].Process.Signal(syscall.SIGKILL)
	workers[victim].Wait()
	survivor := &workerLogs[1-victim]
	// Kill the curator once the survivor has finished a job.
	waitFor(t, "the surviving worker to finish a job", time.Minute, func() bool { return len(survivor.lines("finished ")) > 0 })
	curator.Process.Signal(syscall.SIGKILL)
	curator.Wait()
	// A new curator attaches to the same workflow and finishes the run.
	var resumedLog logBuf
	resumed := dptune(&resumedLog, args...)
	if err := resumed.Run(); err != nil {
		t.Fatalf("the resumed curator: %v\n%s", err, resumedLog.String())
	}
	if !strings.Contains(resumedLog.String(), "resumed") {
		t.Errorf("the second curator did not attach to the first one's workflow:\n%s", resumedLog.String())
	}
	// Every job ran to the end exactly once (seed 5 draws K = 6 runs); the
	// killed one was retried on the survivor.
	finished := map[string]int{}
	for i := range workerLogs {
		for _, l := range workerLogs[i].lines("finished ") {
			finished[strings.Join(strings.Fields(l)[1:3], " ")]++
		}
	}
	for job, n := range finished {
		if n != 1 {
			t.Errorf("job %s finished %d times", job, n)
		}
	}
	if len(finished) != 6 {
		t.Errorf("%d jobs finished, want K = 6: %v", len(finished), finished)
	}
	if strings.Contains(workerLogs[victim].String(), "finished "+strings.Join(killedJob, " ")) {
		t.Logf("the killed worker had finished %v before the kill", killedJob)
	} else if retried := survivor.lines("running " + strings.Join(killedJob, " ")); len(retried) != 1 || !strings.Contains(retried[0], "attempt 2") {
		t.Errorf("the killed worker's job %v was not retried once on the survivor: %v", killedJob, retried)
	}
	t.Logf("killed worker %d during job %v; curator killed after the survivor's first job; %d jobs", victim, killedJob, len(finished))

	local := filepath.Join(dir, "local")
	if code, text := run(t, tuneArgs(local)...); code != 0 {
		t.Fatalf("local run: exit %d: %s", code, text)
	}
	for _, f := range []string{"report.json", "params.bin"} {
		a, err1 := os.ReadFile(filepath.Join(out, f))
		b, err2 := os.ReadFile(filepath.Join(local, f))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between --runner temporal and --runner local", f)
		}
	}
}
