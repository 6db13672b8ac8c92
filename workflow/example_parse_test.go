package workflow_test

import (
	"fmt"

	"github.com/layoverhq/layover/workflow"
)

// A bad file is refused with its line and the field at fault.
func ExampleParse() {
	_, err := workflow.Parse([]byte(`name: nightly
tasks:
  fetch: {run: ./fetch.sh}
  review:
    needs: [fecth]
    agent: claude
    prompt: Review the night's changes.
`), ".", "yaml")
	fmt.Println(err)
	// Output:
	// line 5: tasks.review.needs: no task "fecth" (known: fetch, review)
}
