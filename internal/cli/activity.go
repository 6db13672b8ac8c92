package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/layoverhq/layover/command"
)

// ActivityOptions are the flags of layover activity.
type ActivityOptions struct {
	JSON  bool
	Limit int
	Store string
}

func runActivity(ctx context.Context, env *Env, args []string) error {
	var opts ActivityOptions
	fs := newFlagSet("activity", "activity [--json] [--limit N] [--store LOCATION]")
	fs.BoolVar(&opts.JSON, "json", false, "print JSON")
	fs.IntVar(&opts.Limit, "limit", 100, "show the newest N lines (0: all)")
	fs.StringVar(&opts.Store, "store", "", storeUsage)
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	if opts.Limit < 0 {
		return usageErr("activity: --limit must be 0 or more")
	}
	st, err := openStoreReadOnly(ctx, env, opts.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	lines, err := st.Activity(ctx, opts.Limit)
	if err != nil {
		return internalErr("read store: %v", err)
	}
	if opts.JSON {
		type line struct {
			At   any    `json:"at"`
			Kind string `json:"kind"`
			Line string `json:"line"`
		}
		out := []line{}
		for _, a := range lines {
			out = append(out, line{At: jsonTime(a.At), Kind: a.Kind, Line: a.Line})
		}
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	for _, a := range lines {
		fmt.Fprintf(env.Stdout, "%s  %s\n", command.HumanTime(a.At), shown(a.Line))
	}
	return nil
}
