package temporalrunner

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func TestCodec(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	c, err := NewCodec(key)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte(`{"score":0.9731}`)
	p, err := converter.GetDefaultDataConverter().ToPayload(secret)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := c.Encode([]*commonpb.Payload{p})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(enc[0].Data, []byte("0.9731")) || bytes.Contains(enc[0].Data, []byte("score")) {
		t.Fatal("the encoded payload holds the plaintext")
	}
	enc2, _ := c.Encode([]*commonpb.Payload{p})
	if bytes.Equal(enc[0].Data, enc2[0].Data) {
		t.Error("two encodings of one payload are equal: the nonce is not fresh")
	}
	dec, err := c.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	var back []byte
	if err := converter.GetDefaultDataConverter().FromPayload(dec[0], &back); err != nil || !bytes.Equal(back, secret) {
		t.Fatalf("round trip: %q, %v", back, err)
	}
	// Tampering with any byte is detected.
	for i := range enc[0].Data {
		bad := &commonpb.Payload{Metadata: enc[0].Metadata, Data: bytes.Clone(enc[0].Data)}
		bad.Data[i] ^= 1
		if _, err := c.Decode([]*commonpb.Payload{bad}); err == nil {
			t.Fatalf("flipping byte %d went undetected", i)
		}
	}
	// Another key says so.
	other, _ := NewCodec(bytes.Repeat([]byte{8}, 32))
	if _, err := other.Decode(enc); err == nil {
		t.Error("a payload decoded under another key")
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
