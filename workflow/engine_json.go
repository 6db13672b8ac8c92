package workflow

import (
	"encoding/json"
	"fmt"
)

// The stored form of a definition (canonical), read back by
// decodeCanonical.
type (
	storedOnQuota struct {
		Action  string `json:"action"`
		MaxWait string `json:"max_wait"`
	}
	storedBudget struct {
		Runs int `json:"runs"`
	}
	storedTask struct {
		Name       string   `json:"name"`
		Needs      []string `json:"needs,omitempty"`
		Run        string   `json:"run,omitempty"`
		Agent      []string `json:"agent,omitempty"`
		Prompt     string   `json:"prompt,omitempty"`
		PromptFile string   `json:"prompt_file,omitempty"`
		Resume     string   `json:"resume,omitempty"`
		Check      string   `json:"check,omitempty"`
		Verify     string   `json:"verify,omitempty"`
		Goal       string   `json:"goal,omitempty"`
		Quota      []string `json:"quota,omitempty"`
		Env        []string `json:"env,omitempty"`
		Func       bool     `json:"func,omitempty"`
	}
	storedDefinition struct {
		Name     string        `json:"name"`
		OnQuota  storedOnQuota `json:"on_quota"`
		Attempts int           `json:"attempts"`
		Budget   storedBudget  `json:"budget"`
		Timeout  string        `json:"timeout,omitempty"`
		Tasks    []storedTask  `json:"tasks"`
	}
)

// canonical is a definition as a run stores it (record.Run.Definition):
// its defaults applied, durations as Go writes them, keys in a fixed
// order, so that two equal definitions give equal bytes. A Go function is
// stored as "func": true: a run id reused with another function is not
// told apart.
func canonical(d Definition) ([]byte, error) {
	out := storedDefinition{Name: d.Name, OnQuota: storedOnQuota{d.OnQuota.Action, d.OnQuota.MaxWait.String()}, Attempts: d.Attempts, Budget: storedBudget{d.Budget.Runs}}
	if d.Timeout > 0 {
		out.Timeout = d.Timeout.String()
	}
	for _, t := range d.Tasks {
		out.Tasks = append(out.Tasks, storedTask{
			Name: t.Name, Needs: t.Needs, Run: t.Run, Agent: t.Agent, Prompt: t.Prompt, PromptFile: t.PromptFile,
			Resume: t.Resume, Check: t.Check, Verify: t.Verify, Goal: t.Goal, Quota: t.Quota, Env: t.Env, Func: t.Func != nil,
		})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("workflow: encode the definition: %w", err)
	}
	return b, nil
}
