package temporalrunner

import (
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// Options say how a curator or a worker reaches the Temporal cluster.
type Options struct {
	Address   string // host:port of the frontend, e.g. 127.0.0.1:7233
	Namespace string // "" means "default"
	TaskQueue string
	// KeyFile is the curator's payload key (LoadKey); every worker of the
	// task queue needs the same file.
	KeyFile string
}

// Dial connects to the cluster with every payload and failure sealed by
// the key file's Codec (NewDataConverter, NewFailureConverter), and returns
// the codec too. The SDK's own log goes to stderr, warnings and errors
// only.
func Dial(o Options) (client.Client, *Codec, error) {
	if o.Address == "" || o.TaskQueue == "" {
		return nil, nil, fmt.Errorf("temporalrunner: a Temporal address and a task queue are needed")
	}
	key, err := LoadKey(o.KeyFile)
	if err != nil {
		return nil, nil, err
	}
	codec, err := NewCodec(key)
	if err != nil {
		return nil, nil, err
	}
	ns := o.Namespace
	if ns == "" {
		ns = "default"
	}
	c, err := client.Dial(client.Options{
		HostPort:         o.Address,
		Namespace:        ns,
		DataConverter:    NewDataConverter(codec),
		FailureConverter: NewFailureConverter(codec),
		Logger:           log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("temporalrunner: connecting to Temporal at %s: %w", o.Address, err)
	}
	return c, codec, nil
}
