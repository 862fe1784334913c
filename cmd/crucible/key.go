package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/store"
)

func newKeyCommand() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use: "key",
		Example: `  crucible key create --tenant team-a
  crucible key list
  crucible key revoke key_e092b9da2954`,
		Short: "Create, list and revoke the HTTP API's keys",
		Long: `Manage the API keys of ` + "`crucible serve`" + `. A key acts as one tenant: what it
creates (runs, sessions, artifacts) only that tenant's keys can see.

Keys live in the server's database (--db, as for serve), stored only as the
SHA-256 of the secret; the secret is printed once, by create. A running server
sees a new or revoked key within 5 seconds. Once any key exists, every /v1/
request needs one ("Authorization: Bearer crk_..."), and serve may listen
beyond loopback.`,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", "run store: SQLite file path or postgres:// URL (default "+store.DefaultSQLitePath+")")

	var tenant, name string
	var asJSON, e2b bool
	create := &cobra.Command{
		Use: "create --tenant NAME",
		Example: `  crucible key create --tenant team-a --name ci
  crucible key create --tenant team-a --e2b   # for E2B's SDKs: E2B_API_KEY=e2b_...`,
		Short: "Create a key and print its secret (once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			form := store.KeyCrucible
			if e2b {
				form = store.KeyE2B
			}
			secret, k, err := store.NewAPIKeyOf(form, tenant, name)
			if err != nil {
				return usageError(fmt.Errorf("--tenant/--name: %w", err))
			}
			return withStore(cmd.Context(), db, func(st store.Store) error {
				if err := st.CreateKey(cmd.Context(), k); err != nil {
					return err
				}
				if asJSON {
					return json.NewEncoder(os.Stdout).Encode(struct {
						*store.APIKey
						Secret string `json:"secret"`
					}{k, secret})
				}
				fmt.Fprintf(os.Stderr, "created %s for tenant %q; the secret below is shown only now:\n", k.ID, k.Tenant)
				fmt.Println(secret)
				return nil
			})
		},
	}
	create.Flags().StringVar(&tenant, "tenant", "", "tenant the key acts as (a-z, 0-9, '_', '-'; required)")
	create.Flags().StringVar(&name, "name", "", "a label for the key, such as \"ci\"")
	create.Flags().BoolVar(&asJSON, "json", false, "print the key, secret included, as JSON")
	create.Flags().BoolVar(&e2b, "e2b", false, "make the secret E2B-shaped (e2b_ and 64 hex digits), as E2B's SDKs expect of E2B_API_KEY; it works for the /v1 API too")
	_ = create.MarkFlagRequired("tenant")

	var listJSON bool
	list := &cobra.Command{
		Use:     "list",
		Example: `  crucible key list --json`,
		Short:   "List the keys, revoked ones included (never their secrets)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), db, func(st store.Store) error {
				keys, err := st.ListKeys(cmd.Context())
				if err != nil {
					return err
				}
				if listJSON {
					if keys == nil {
						keys = []store.APIKey{}
					}
					return json.NewEncoder(os.Stdout).Encode(keys)
				}
				tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tTENANT\tNAME\tCREATED\tREVOKED")
				for _, k := range keys {
					revoked := "-"
					if k.RevokedAt != nil {
						revoked = k.RevokedAt.Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Tenant, k.Name, k.CreatedAt.Format(time.RFC3339), revoked)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print the keys as a JSON array")

	revoke := &cobra.Command{
		Use:     "revoke ID",
		Example: `  crucible key revoke key_e092b9da2954`,
		Short:   "Revoke a key (its ID, as list shows it)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), db, func(st store.Store) error {
				err := st.RevokeKey(cmd.Context(), args[0])
				if errors.Is(err, store.ErrNotFound) {
					return usageError(fmt.Errorf("no key %q (see `crucible key list`)", args[0]))
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "revoked %s\n", args[0])
				return nil
			})
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// withStore opens the store at db for fn; a failure of the store itself is
// an internal error.
func withStore(ctx context.Context, db string, fn func(store.Store) error) error {
	if ctx == nil {
		ctx = context.Background()
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		return platformError(err)
	}
	defer st.Close()
	err = fn(st)
	var ec exitCodeError
	if err != nil && !asExitCode(err, &ec) {
		return platformError(err)
	}
	return err
}
