// Command oneread is the reference of the passoverhead benchmark: the least a
// Go program does to consult a SQLite ledger. It opens the file named by its
// argument through the same pure-Go driver layover uses, reads one row and
// exits; it prints nothing unless it fails.
package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "modernc.org/sqlite" // the driver layover uses
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: oneread FILE")
		os.Exit(2)
	}
	db, err := sql.Open("sqlite", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "oneread:", err)
		os.Exit(1)
	}
	defer db.Close()
	var remaining int64
	if err := db.QueryRow(`SELECT remaining FROM quota_state LIMIT 1`).Scan(&remaining); err != nil {
		fmt.Fprintln(os.Stderr, "oneread:", err)
		os.Exit(1)
	}
}
