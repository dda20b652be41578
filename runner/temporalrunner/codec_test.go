package temporalrunner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/dptune/dptune/runner"
)

func testCodec(t *testing.T, b byte) *Codec {
	t.Helper()
	c, err := NewCodec(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCodec(t *testing.T) {
	c := testCodec(t, 7)
	secret := []byte(`{"score":0.9731}`)
	p, err := converter.GetDefaultDataConverter().ToPayload(secret)
	if err != nil {
		t.Fatal(err)
	}
	at := Binding{WorkflowID: "A", RunID: "r", Role: "job output"}
	enc, err := c.Seal(p, at)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(enc.Data, []byte("0.9731")) || bytes.Contains(enc.Data, []byte("score")) {
		t.Fatal("the sealed payload holds the plaintext")
	}
	enc2, _ := c.Seal(p, at)
	if bytes.Equal(enc.Data, enc2.Data) {
		t.Error("two sealings of one payload are equal: the nonce is not fresh")
	}
	dec, err := c.Open(enc, at)
	if err != nil {
		t.Fatal(err)
	}
	var back []byte
	if err := converter.GetDefaultDataConverter().FromPayload(dec, &back); err != nil || !bytes.Equal(back, secret) {
		t.Fatalf("round trip: %q, %v", back, err)
	}
	// Tampering with any byte is detected.
	for i := range enc.Data {
		bad := &commonpb.Payload{Metadata: enc.Metadata, Data: bytes.Clone(enc.Data)}
		bad.Data[i] ^= 1
		if _, err := c.Open(bad, at); err == nil {
			t.Fatalf("flipping byte %d went undetected", i)
		}
	}
	// Another key, workflow, run or role does not open it.
	if _, err := testCodec(t, 8).Open(enc, at); !errors.Is(err, ErrUnsealed) {
		t.Errorf("opened under another key: %v", err)
	}
	for _, b := range []Binding{{"B", "r", "job output"}, {"A", "r2", "job output"}, {"A", "r", "results answer"}, {"A", "", "job output"}} {
		if _, err := c.Open(enc, b); !errors.Is(err, ErrUnsealed) {
			t.Errorf("a payload sealed for %+v opened as %+v: %v", at, b, err)
		}
	}
	// Plaintext is refused, not passed through.
	if _, err := c.Open(p, at); !errors.Is(err, ErrUnsealed) || !strings.Contains(err.Error(), "not sealed") {
		t.Errorf("a plaintext payload: %v", err)
	}
}

// The data converter binds each payload to the workflow and run of its
// context and to its role (the Go type it carries): a submit signal sealed
// for workflow A, run r opens there only, and never as another role.
func TestConverterBinding(t *testing.T) {
	dc := NewDataConverter(testCodec(t, 7))
	ctxA := WithExecution(context.Background(), "A", "r")
	tasks := []runner.Task{{ID: "run 1", Kind: "k", Input: []byte(`{"seed":3}`)}}
	ps, err := dc.(sealedConverter).WithContext(ctxA).ToPayloads(tasks)
	if err != nil {
		t.Fatal(err)
	}
	var got []runner.Task
	if err := dc.(sealedConverter).WithContext(ctxA).FromPayloads(ps, &got); err != nil || len(got) != 1 || got[0].ID != "run 1" {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for name, ctx := range map[string]context.Context{
		"workflow B": WithExecution(context.Background(), "B", "r"),
		"run r2":     WithExecution(context.Background(), "A", "r2"),
		"no context": context.Background(),
	} {
		if err := dc.(sealedConverter).WithContext(ctx).FromPayloads(ps, &got); !errors.Is(err, ErrUnsealed) {
			t.Errorf("a submit sealed for A/r opened in %s: %v", name, err)
		}
	}
	var out []byte
	if err := dc.(sealedConverter).WithContext(ctxA).FromPayloads(ps, &out); !errors.Is(err, ErrUnsealed) {
		t.Errorf("a submit opened as a task output: %v", err)
	}
	var blob KeyBlob
	if err := dc.(sealedConverter).WithContext(ctxA).FromPayloads(ps, &blob); !errors.Is(err, ErrUnsealed) {
		t.Errorf("a submit opened as a key answer: %v", err)
	}
	// A plaintext payload (the default converter's) is refused.
	plain, _ := converter.GetDefaultDataConverter().ToPayloads(tasks)
	if err := dc.(sealedConverter).WithContext(ctxA).FromPayloads(plain, &got); !errors.Is(err, ErrUnsealed) {
		t.Errorf("a plaintext submit was accepted: %v", err)
	}
	// Into a RawValue a payload comes out still sealed (the runner opens
	// its query answers itself); a plaintext RawValue is sealed on the way
	// out, a sealed one goes as it is.
	var raw converter.RawValue
	if err := dc.(sealedConverter).WithContext(context.Background()).FromPayloads(ps, &raw); err != nil || raw.Payload() != ps.Payloads[0] {
		t.Errorf("a RawValue did not get the sealed payload as it is: %v", err)
	}
	out1, _ := dc.ToPayload(converter.NewRawValue(plain.Payloads[0]))
	out2, _ := dc.ToPayload(converter.NewRawValue(ps.Payloads[0]))
	if !isSealed(out1) || out2 != ps.Payloads[0] {
		t.Error("a plaintext RawValue went out unsealed, or a sealed one was sealed again")
	}
	// The start is sealed before the run has an ID, and opens in any run
	// of its workflow (its key blob is bound by WrapKey).
	st, _ := dc.(sealedConverter).WithContext(WithExecution(context.Background(), "A", "")).ToPayloads(Start{MaxPending: 3})
	var back Start
	if err := dc.(sealedConverter).WithContext(ctxA).FromPayloads(st, &back); err != nil || back.MaxPending != 3 {
		t.Errorf("the start did not open in its workflow: %+v, %v", back, err)
	}
	if err := dc.(sealedConverter).WithContext(WithExecution(context.Background(), "B", "r")).FromPayloads(st, &back); !errors.Is(err, ErrUnsealed) {
		t.Errorf("A's start opened in B: %v", err)
	}
}

// A failure's text is sealed; a failure whose text is not (the server's
// own, or forged) never passes its text on.
func TestFailureConverter(t *testing.T) {
	fc := NewFailureConverter(testCodec(t, 7))
	f := fc.ErrorToFailure(temporal.NewApplicationError("run 3 diverged at score 0.97", "X", errors.New("cause 0.55")))
	if strings.Contains(f.String(), "0.97") || strings.Contains(f.String(), "0.55") {
		t.Fatalf("the failure holds its text in plaintext: %v", f)
	}
	if err := fc.FailureToError(f); !strings.Contains(err.Error(), "run 3 diverged at score 0.97") {
		t.Errorf("round trip: %v", err)
	}
	forged := &failurepb.Failure{Message: "the server says 0.99", StackTrace: "st",
		FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{Type: "X"}},
		Cause:       &failurepb.Failure{Message: "plain cause 0.42"}}
	err := fc.FailureToError(forged)
	if strings.Contains(err.Error(), "0.99") || strings.Contains(err.Error(), "0.42") || !strings.Contains(err.Error(), "not sealed") {
		t.Errorf("a plaintext failure: %v", err)
	}
	// Another key's sealed failure is refused the same way.
	other := NewFailureConverter(testCodec(t, 8)).ErrorToFailure(errors.New("other key 0.31"))
	if err := fc.FailureToError(other); strings.Contains(err.Error(), "0.31") {
		t.Errorf("another key's failure opened: %v", err)
	}
}

// A key wraps for one workflow ID and settings digest; any other, or a
// blob the server made, is refused.
func TestKeyWrap(t *testing.T) {
	c := testCodec(t, 7)
	var key, s1, s2 [32]byte
	key[0], s1[0], s2[0] = 9, 1, 2
	b, err := c.WrapKey(key, "W", s1)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, key[:]) {
		t.Fatal("the blob holds the key")
	}
	if got, err := c.UnwrapKey(b, "W", s1); err != nil || got != key {
		t.Fatalf("round trip: %x, %v", got, err)
	}
	for name, f := range map[string]func() error{
		"another workflow": func() error { _, err := c.UnwrapKey(b, "W2", s1); return err },
		"other settings":   func() error { _, err := c.UnwrapKey(b, "W", s2); return err },
		"another curator":  func() error { _, err := testCodec(t, 8).UnwrapKey(b, "W", s1); return err },
		"server's bytes":   func() error { _, err := c.UnwrapKey(make(KeyBlob, len(b)), "W", s1); return err },
		"short":            func() error { _, err := c.UnwrapKey(KeyBlob{1, 2, 3}, "W", s1); return err },
	} {
		if err := f(); !errors.Is(err, ErrForeignKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	if err := CreateKey(path); err != nil {
		t.Fatal(err)
	}
	k1, err := LoadKey(path)
	if err != nil || len(k1) != 32 {
		t.Fatalf("LoadKey: %d bytes, %v", len(k1), err)
	}
	if err := CreateKey(path); err != nil {
		t.Fatal(err)
	}
	if k2, _ := LoadKey(path); !bytes.Equal(k1, k2) {
		t.Error("CreateKey replaced an existing key")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(path); err == nil {
		t.Error("a world-readable key file was accepted")
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("not hex\n"), 0o600)
	if _, err := LoadKey(bad); err == nil {
		t.Error("a malformed key file was accepted")
	}
}
