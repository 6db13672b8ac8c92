package cli

import (
	"context"

	"github.com/layoverhq/layover/workflow"
)

// execute runs def as run runID in this process. The engine comes next;
// until then only --dry-run runs.
func (o *FlowRunOptions) execute(context.Context, *Env, workflow.Definition, string, string) error {
	return usageErr("flow run: only --dry-run works yet: the engine that runs a workflow comes in the next change")
}
