package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"io"
	"io/fs"
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

// temporalDevServer starts a Temporal dev server (bin/temporal, `make
// temporal`; the test is skipped without it) keeping its database in dir,
// until the test ends, and returns its address once it is healthy.
func temporalDevServer(t *testing.T, ctx context.Context, dir string) string {
	t.Helper()
	temporal, err := filepath.Abs("../../bin/temporal")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(temporal); err != nil {
		t.Skip("bin/temporal is absent: `make temporal` builds the Temporal CLI")
	}
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	server := exec.CommandContext(ctx, temporal, "server", "start-dev", "--ip", "127.0.0.1", "--port", fmt.Sprint(port), "--headless",
		"--db-filename", filepath.Join(dir, "temporal.db"), "--log-level", "error")
	var serverLog logBuf
	server.Stdout, server.Stderr = &serverLog, &serverLog
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })
	waitFor(t, "the Temporal dev server", time.Minute, func() bool {
		return exec.CommandContext(ctx, temporal, "operator", "cluster", "health", "--address", addr).Run() == nil
	})
	return addr
}

// dptuneProcess is `dptune args…` as a child process (this test binary
// running main), its output going to log.
func dptuneProcess(ctx context.Context, log *logBuf, args ...string) *exec.Cmd {
	p := exec.CommandContext(ctx, os.Args[0], args...)
	p.Env = append(os.Environ(), "DPTUNE_TEST_MAIN=1")
	p.Stdout, p.Stderr = log, log
	return p
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
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	addr := temporalDevServer(t, ctx, dir)

	key := filepath.Join(dir, "key")
	mnist := realMNISTSubset(t, 2400)
	space := filepath.Join(dir, "space.json")
	os.WriteFile(space, []byte(`{"name": "small", "dims": [
		{"name": "learning_rate", "values": [0.5, 1], "log": true},
		{"name": "clip_norm", "values": [0.5, 1]}]}`), 0o644)
	dptune := func(log *logBuf, args ...string) *exec.Cmd { return dptuneProcess(ctx, log, args...) }
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

// TestTemporalFolder tunes an image folder (340 PNGs of real MNIST) with
// --runner temporal on two `dptune worker` processes that read the
// curator's path (one machine, no --data-dir): the seeded release equals
// --runner local's, so the workers read the folder with the curator's
// settings (its shape and --mean/--std travel in the tasks). The curator
// then changes twenty training images: the workers, which kept the old
// images in memory, read the files again, and the release equals
// --runner local's on the changed folder. Last, a worker whose own copy
// (--data-dir) differs from the curator's by one training image fails the
// tasks at once — no retry — and the curator ends with the worker's one
// line naming the dataset.
func TestTemporalFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	dir := t.TempDir()
	addr := temporalDevServer(t, ctx, dir)
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte(strings.Repeat("cd", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "digits")
	writeMNISTFolder(t, folder, 240, 100)
	space := filepath.Join(dir, "space.json")
	os.WriteFile(space, []byte(`{"name": "small", "dims": [
		{"name": "learning_rate", "values": [0.5, 1], "log": true},
		{"name": "clip_norm", "values": [0.5, 1]}]}`), 0o644)
	temporalFlags := func(queue string) []string {
		return []string{"--temporal-address", addr, "--task-queue", queue, "--temporal-key", key}
	}
	worker := func(log *logBuf, queue string, extra ...string) {
		p := dptuneProcess(ctx, log, append(append([]string{"worker", "--concurrency", "1"}, temporalFlags(queue)...), extra...)...)
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Process.Kill(); p.Wait() })
	}
	var workerLogs [2]logBuf
	for i := range workerLogs {
		worker(&workerLogs[i], "it")
	}
	tuneArgs := func(out string) []string {
		return []string{"tune", "--tuner", "randomstop", "--dataset", "folder", "--data-dir", folder, "--nominal-size", "240",
			"--mean", "0.1307", "--std", "0.3081", "--val-size", "100", "--batch-size", "40", "--space", space, "--epochs", "1",
			"--mean-runs", "3", "--epsilon", "8", "--seed", "5", "--out", out}
	}
	onWorkers := func(out, queue string) (int, string) {
		var log logBuf
		err := dptuneProcess(ctx, &log, append(tuneArgs(out), append([]string{"--runner", "temporal", "--heartbeat-timeout", "2s"}, temporalFlags(queue)...)...)...).Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, log.String()
	}
	sameRelease := func(what, a, b string) {
		t.Helper()
		for _, f := range []string{"report.json", "params.bin"} {
			x, err1 := os.ReadFile(filepath.Join(a, f))
			y, err2 := os.ReadFile(filepath.Join(b, f))
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if !bytes.Equal(x, y) {
				t.Errorf("%s: %s differs between --runner temporal and --runner local", what, f)
			}
		}
	}
	tuneBoth := func(what string) (local string) {
		t.Helper()
		out, local := filepath.Join(dir, what+"-temporal"), filepath.Join(dir, what+"-local")
		if code, text := onWorkers(out, "it"); code != 0 {
			t.Fatalf("%s: --runner temporal: exit %d: %s\nworkers:\n%s\n%s", what, code, text, workerLogs[0].String(), workerLogs[1].String())
		}
		if code, text := run(t, tuneArgs(local)...); code != 0 {
			t.Fatalf("%s: --runner local: exit %d: %s", what, code, text)
		}
		sameRelease(what, out, local)
		return local
	}
	first := tuneBoth("first")

	// The curator changes twenty training images (inverted); the workers
	// hold the old ones in memory.
	changed := 0
	filepath.WalkDir(filepath.Join(folder, "train"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || changed == 20 {
			return err
		}
		invertPNG(t, path)
		changed++
		return nil
	})
	second := tuneBoth("changed")
	a, err1 := os.ReadFile(filepath.Join(first, "params.bin"))
	b, err2 := os.ReadFile(filepath.Join(second, "params.bin"))
	if err1 != nil || err2 != nil || bytes.Equal(a, b) {
		t.Errorf("the changed folder trains the same model (%v, %v): the test cannot tell old images from new", err1, err2)
	}
	for i := range workerLogs {
		if f := workerLogs[i].lines("failed "); len(f) > 0 {
			t.Errorf("worker %d failed tasks: %v", i, f)
		}
	}
	t.Logf("tasks finished by the two workers: %d and %d", len(workerLogs[0].lines("finished ")), len(workerLogs[1].lines("finished ")))

	// A worker whose copy differs by one training image.
	copyDir := filepath.Join(dir, "copy", "digits")
	if err := os.CopyFS(copyDir, os.DirFS(folder)); err != nil {
		t.Fatal(err)
	}
	invertPNG(t, filepath.Join(copyDir, "train", "7", "00015.png"))
	var badLog logBuf
	worker(&badLog, "bad", "--data-dir", copyDir)
	began := time.Now()
	code, text := onWorkers(filepath.Join(dir, "bad"), "bad")
	want := "job: dataset folder:digits: this worker's copy of the data differs from the curator's"
	if code == 0 || !strings.Contains(text, want) {
		t.Errorf("a worker with a copy that differs: exit %d: %s\nworker:\n%s", code, text, badLog.String())
	}
	ran := badLog.lines("running ")
	for _, l := range ran {
		if !strings.HasSuffix(l, "attempt 1") {
			t.Errorf("a refused task was retried: %s", l)
		}
	}
	if len(ran) == 0 || len(badLog.lines("failed ")) != len(ran) {
		t.Errorf("the worker with the other copy: %d tasks started, %d failed:\n%s", len(ran), len(badLog.lines("failed ")), badLog.String())
	}
	t.Logf("refused in %.1f s: %s", time.Since(began).Seconds(), lastLine(text))
	t.Logf("wall time %.1f s", time.Since(start).Seconds())
}

// invertPNG rewrites the grey PNG at path with its pixels inverted.
func invertPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	g, ok := img.(*image.Gray)
	if !ok {
		t.Fatalf("%s is not a grey image", path)
	}
	for i := range g.Pix {
		g.Pix[i] = 255 - g.Pix[i]
	}
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := png.Encode(w, g); err != nil {
		t.Fatal(err)
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
