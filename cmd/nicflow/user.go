package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

var userDir string

var userCmd = &cobra.Command{
	Use:   "user add|remove|list --dir DIR",
	Short: "Manage the users PostgreSQL clients log in as (nicflow serve --auth)",
	Long: `Manage the users of "nicflow serve --auth": each is a name and a SCRAM-SHA-256
verifier (salt and keys, never the password) in DIR/users.json (mode 0600).
DIR must hold a database (user add refuses a directory without one). A
running server reads the file at each connection.

The password comes from NICFLOW_PASSWORD, else it is asked for on the
terminal (not echoed), else read as one line from standard input.`,
	Example: `  nicflow user add --dir data/sf1 alice        # asks for the password
  NICFLOW_PASSWORD=... nicflow user add --dir data/sf1 bob
  nicflow user list --dir data/sf1
  nicflow serve --dir data/sf1 --auth --pg-listen 0.0.0.0:5433`,
}

var userAddCmd = &cobra.Command{
	Use:   "add NAME",
	Short: "Add a user, or set an existing user's password",
	Args:  cobra.ExactArgs(1),
	RunE: func(cmd *cobra.Command, args []string) error {
		if userDir == "" {
			return usagef("--dir is required")
		}
		// NB: users.json belongs beside a catalog: a mistyped --dir must
		// not leave a users file where no server will read it.
		if err := storage.IsDatabase(userDir); err != nil {
			if !nferr.Is(err, nferr.KindQuery) {
				return err // a database that lost its catalog
			}
			return nferr.Queryf("%s is not a nicflow database (no catalog), so no server reads users from it; give the database's directory, or create one first (`nicflow sql --dir %s --create \"select 1\"`, or `nicflow serve --dir %s --create`)", userDir, userDir, userDir)
		}
		pw, err := readPassword(args[0])
		if err != nil {
			return err
		}
		if err := pgwire.AddUser(pgwire.UsersFile(userDir), args[0], pw); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "user %s added\n", args[0])
		return nil
	},
}

var userRemoveCmd = &cobra.Command{
	Use:   "remove NAME",
	Short: "Remove a user",
	Args:  cobra.ExactArgs(1),
	RunE: func(cmd *cobra.Command, args []string) error {
		if userDir == "" {
			return usagef("--dir is required")
		}
		return pgwire.RemoveUser(pgwire.UsersFile(userDir), args[0])
	},
}

var userListCmd = &cobra.Command{
	Use:   "list",
	Short: "List the users",
	Args:  cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		if userDir == "" {
			return usagef("--dir is required")
		}
		names, err := pgwire.ListUsers(pgwire.UsersFile(userDir))
		if err != nil {
			return err
		}
		for _, n := range names {
			fmt.Fprintln(cmd.OutOrStdout(), n)
		}
		return nil
	},
}

// readPassword reads user's new password: NICFLOW_PASSWORD, the terminal
// (twice, not echoed), or a line of standard input.
func readPassword(user string) (string, error) {
	if pw := os.Getenv("NICFLOW_PASSWORD"); pw != "" {
		return pw, nil
	}
	if term.IsTerminal(int(os.Stdin.Fd())) {
		fmt.Fprintf(os.Stderr, "password for %s: ", user)
		a, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return "", nferr.IOf("reading the password: %w", err)
		}
		fmt.Fprintf(os.Stderr, "again: ")
		b, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return "", nferr.IOf("reading the password: %w", err)
		}
		if string(a) != string(b) {
			return "", nferr.Queryf("the passwords differ")
		}
		return string(a), nil
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", nferr.Queryf("no password: set NICFLOW_PASSWORD or write it on standard input")
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func init() {
	userCmd.PersistentFlags().StringVar(&userDir, "dir", "", "database directory whose users to manage (required)")
	userCmd.AddCommand(userAddCmd, userRemoveCmd, userListCmd)
	rootCmd.AddCommand(userCmd)
}
