package workflow_test

import (
	"context"
	"fmt"

	"github.com/layoverhq/layover/workflow"
)

// A workflow built in Go: a command, an agent with a fallback candidate,
// a Go function, and the order they can run in.
func ExampleDefinition_Order() {
	def := workflow.Definition{
		Name:    "nightly",
		OnQuota: workflow.OnQuota{Action: workflow.ActionPause},
		Tasks: []workflow.Task{
			{Name: "publish", Needs: []string{"review", "docs"}, Run: "./publish.sh"},
			{Name: "review", Needs: []string{"fetch"}, Agent: []string{"claude", "codex"}, Prompt: "Review the night's changes."},
			{Name: "fetch", Run: "./fetch.sh", Quota: []string{"github"}},
			{Name: "docs", Func: func(ctx context.Context, a *workflow.Attempt) error {
				return a.Checkpoint("built", nil)
			}},
		},
	}
	if err := def.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range def.Order() {
		fmt.Println(t.Name, t.Needs)
	}
	fmt.Println("after fetch:", def.Dependents("fetch"))
	// Output:
	// fetch []
	// review [fetch]
	// docs []
	// publish [review docs]
	// after fetch: [review]
}
