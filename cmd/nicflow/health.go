package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/internal/nferr"
)

var healthFlags struct {
	admin      string
	pg         string
	minMembers int
	timeout    time.Duration
}

var healthCmd = &cobra.Command{
	Use:   "health (--admin ADDR | --pg ADDR)",
	Short: "Check that a local node or server answers (container and systemd health checks)",
	Long: `Exit 0 when the node or server at the address answers, 5 (unavailable) when
it does not: a health check that needs nothing but this binary, for images
without a shell or curl (the nicflow container image is distroless).

  --admin ADDR   a coordinator, worker or storage node: GET http://ADDR/status
                 must return the node's status (the node has started and
                 joined the cluster); with --min-members N the node must
                 see at least N alive members (for the coordinator: itself,
                 the workers and the storage nodes).
  --pg ADDR      "nicflow serve" (or a coordinator serving PostgreSQL): the
                 server must answer a PostgreSQL SSLRequest. No login is
                 attempted, so it works with --auth too.

Prints one line saying what answered.`,
	Example: `  nicflow health --admin 127.0.0.1:7480 --min-members 3   # coordinator, 2 others joined
  nicflow health --admin 127.0.0.1:7481                   # a worker
  nicflow health --pg 127.0.0.1:5433                      # nicflow serve`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		f := healthFlags
		if (f.admin == "") == (f.pg == "") {
			return usagef("give exactly one of --admin and --pg")
		}
		if f.timeout <= 0 {
			return usagef("--timeout must be positive")
		}
		if f.minMembers < 0 {
			return usagef("--min-members must not be negative")
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
		defer cancel()
		var line string
		var err error
		if f.admin != "" {
			line, err = checkAdmin(ctx, f.admin, f.minMembers)
		} else {
			if f.minMembers > 0 {
				return usagef("--min-members goes with --admin")
			}
			line, err = checkPG(ctx, f.pg)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), line)
		return nil
	},
}

func init() {
	f := healthCmd.Flags()
	f.StringVar(&healthFlags.admin, "admin", "", "admin address host:port of a coordinator, worker or storage node (its --admin)")
	f.StringVar(&healthFlags.pg, "pg", "", "PostgreSQL address host:port of nicflow serve (its --pg-listen)")
	f.IntVar(&healthFlags.minMembers, "min-members", 0, "with --admin: alive members the node must see, itself included")
	f.DurationVar(&healthFlags.timeout, "timeout", 3*time.Second, "give up after this long")
	rootCmd.AddCommand(healthCmd)
}

// checkAdmin reads a node's /status.
func checkAdmin(ctx context.Context, addr string, minMembers int) (string, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", usagef("--admin %q: want host:port", addr)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/status", nil)
	if err != nil {
		return "", usagef("--admin %q: %v", addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", nferr.Unavailablef("node admin port %s: %v", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", nferr.Unavailablef("node admin port %s: GET /status: %s", addr, resp.Status)
	}
	var st cluster.NodeStatus
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&st); err != nil {
		return "", nferr.Unavailablef("node admin port %s: /status is not a nicflow node status: %v", addr, err)
	}
	if st.Self.ID == "" {
		return "", nferr.Unavailablef("node admin port %s: /status names no node", addr)
	}
	if len(st.Members) < minMembers {
		return "", nferr.Unavailablef("%s %s sees %d alive members, want at least %d", st.Self.Role, st.Self.ID, len(st.Members), minMembers)
	}
	return fmt.Sprintf("ok: %s %s, up %s, %d members", st.Self.Role, st.Self.ID, st.Uptime, len(st.Members)), nil
}

// sslRequest is the PostgreSQL SSLRequest message: length 8, code 80877103.
var sslRequest = []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}

// checkPG sends a PostgreSQL SSLRequest and expects the one-byte answer
// every PostgreSQL server gives ('S' or 'N'), then hangs up.
func checkPG(ctx context.Context, addr string) (string, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", usagef("--pg %q: want host:port", addr)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", nferr.Unavailablef("PostgreSQL server %s: %v", addr, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl) //nolint:errcheck // a failed deadline shows as a failed read
	}
	if _, err := c.Write(sslRequest); err != nil {
		return "", nferr.Unavailablef("PostgreSQL server %s: %v", addr, err)
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return "", nferr.Unavailablef("PostgreSQL server %s did not answer: %v", addr, err)
	}
	if b[0] != 'S' && b[0] != 'N' {
		return "", nferr.Unavailablef("%s is not a PostgreSQL server: it answered an SSLRequest with %q", addr, b[0])
	}
	// A PostgreSQL server now waits for the client (a TLS handshake or the
	// startup message): anything more, or hanging up, is another server
	// whose banner happens to start with S or N.
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)) //nolint:errcheck // a failed deadline shows as a failed read
	var more [64]byte
	n, err := c.Read(more[:])
	if n > 0 {
		return "", nferr.Unavailablef("%s is not a PostgreSQL server: it answered an SSLRequest with %q", addr, append(b[:], more[:n]...))
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		return "", nferr.Unavailablef("%s is not a PostgreSQL server: it answered an SSLRequest with %q and hung up", addr, b[0])
	}
	if b[0] == 'S' {
		return fmt.Sprintf("ok: PostgreSQL server %s (TLS offered)", addr), nil
	}
	return fmt.Sprintf("ok: PostgreSQL server %s", addr), nil
}
