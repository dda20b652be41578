package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// On output that is not a terminal a bar writes one line when its stage
// closes, with the count reached, and nothing while it runs.
func TestBarOneLinePerStageOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	b := newBar(&buf, 3, "epoch 1/2")
	b.Add(1)
	b.Describe("epoch 1/2  loss 0.500")
	b.Add(1)
	if buf.Len() != 0 {
		t.Fatalf("wrote %q before the stage closed", buf.String())
	}
	b.Add(1)
	b.Add(1) // past the total: already closed
	b.Close()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "epoch 1/2  loss 0.500  (3/3) [") {
		t.Fatalf("got %q", buf.String())
	}

	buf.Reset()
	newBar(&buf, 5, "never moved").Close()
	stopped := newBar(&buf, 5, "audit trials")
	stopped.Set(2)
	stopped.Close()
	if got := buf.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "audit trials  (2/5) [") {
		t.Fatalf("got %q", got)
	}
}

// A long phase off a terminal logs each tenth of the way once, then its
// close: ten lines for a phase set one unit at a time, the last its close.
func TestPhaseBarLogsTenths(t *testing.T) {
	var buf bytes.Buffer
	b := newPhaseBar(&buf, 1000, "features (train)")
	for n := 1; n <= 1000; n++ {
		b.Set(n)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 10 {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	for i, l := range lines {
		if want := "features (train)  (" + strconv.Itoa(100*(i+1)) + "/1000) ["; !strings.HasPrefix(l, want) {
			t.Errorf("line %d %q, want prefix %q", i, l, want)
		}
	}
}

// progressTo's callback, resumed part-way as a cached landscape is, writes
// a line where it starts, one per tenth after it and one at the end, none
// with a carriage return.
func TestProgressToResumed(t *testing.T) {
	var buf bytes.Buffer
	p := progressTo(&buf, "GP landscape runs")
	for n := 451; n <= 1000; n++ {
		p(n, 1000)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 7 || strings.Contains(buf.String(), "\r") {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	if !strings.HasPrefix(lines[0], "GP landscape runs  (451/1000) [") || !strings.HasPrefix(lines[6], "GP landscape runs  (1000/1000) [") {
		t.Errorf("lines %q", lines)
	}
}

// stagedProgressTo starts a bar per stage and closes the previous one:
// stage a, below its first tenth, writes one line as b starts; b writes
// its half and its end.
func TestStagedProgress(t *testing.T) {
	var buf bytes.Buffer
	p := stagedProgressTo(&buf)
	p("a", 1, 100)
	p("a", 3, 100)
	p("b", 1, 2)
	p("b", 2, 2)
	want := []string{"a  (3/100) [", "b  (1/2) [", "b  (2/2) ["}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, want[i]) {
			t.Errorf("line %d %q, want prefix %q", i, l, want[i])
		}
	}
}
