// Command gh is layover's fake GitHub CLI, for end-to-end tests and
// `layover demo`. It speaks to GITHUB_API_URL (normally a fake.GitHub) and
// prints what the real gh prints; see fake.GH for what it knows and where it
// differs from the real thing.
package main

import (
	"os"

	"github.com/layoverhq/layover/internal/fake"
)

func main() {
	os.Exit(fake.GH(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
