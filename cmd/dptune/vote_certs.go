package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/job"
)

// newVoteCertsCmd is dptune vote certs: a CA and certificates for a vote
// across machines.
func newVoteCertsCmd() *cobra.Command {
	var r job.VoteCertsRequest
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Write a self-signed CA and the server's and each client's certificate and key for dptune vote serve/client",
		Long: `certs writes into --out, for local use: a self-signed CA (ca.pem, ca.key),
the server's certificate for localhost, 127.0.0.1, ::1 and every --host
(server.pem, server.key), and for i = 1 … --clients client i's certificate
(client-<i>.pem, client-<i>.key), which binds client ID i−1, the client of
--part i/n, in its URI SAN urn:dptune:vote:client:<i−1>. Keys are Ed25519,
mode 0600; certificates are valid for a year. A client's key is both its
TLS key and its signing key in the secure sum. Keep ca.key with the
curator; give each client its own key and ca.pem only. A directory that
already holds any of these files is refused unless --force, which
replaces them (each written to a temporary file and renamed, so a key is
never readable by others; a symbolic link in their place is refused).`,
		Example: `  dptune vote certs --out certs --clients 5 --host vote.example.org`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := r.Write(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote ca.pem, ca.key, server.pem, server.key and client-1 … client-%d (.pem, .key) to %s\n", r.Clients, r.Out)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&r.Out, "out", "", "directory to write the certificates and keys into")
	fl.IntVar(&r.Clients, "clients", 10, "number of client certificates (2 … 255)")
	fl.BoolVar(&r.Force, "force", false, "replace the certificates and keys already in --out")
	fl.StringSliceVar(&r.Hosts, "host", nil, "extra DNS name or IP address the server's certificate is valid for (repeatable)")
	return cmd
}
