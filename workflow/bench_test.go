package workflow_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/layoverhq/layover/workflow"
)

// dagFile is a workflow file of n command tasks on a random DAG, each
// task needing about three earlier ones.
func dagFile(n int) []byte {
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("name: dag\ntasks:\n")
	for i := range n {
		fmt.Fprintf(&b, "  t%d:\n    run: ./step.sh %d\n", i, i)
		if i == 0 {
			continue
		}
		seen := map[int]bool{}
		var needs []string
		for range rng.IntN(7) {
			if j := rng.IntN(i); !seen[j] {
				seen[j] = true
				needs = append(needs, fmt.Sprintf("t%d", j))
			}
		}
		if len(needs) > 0 {
			fmt.Fprintf(&b, "    needs: [%s]\n", strings.Join(needs, ", "))
		}
	}
	return []byte(b.String())
}

// largeFiles are files near the bounds, each of which must parse in
// linear time: the most tasks, a task needing every other one, and a
// 1 MiB list of distinct variable names.
func largeFiles() map[string][]byte {
	var every strings.Builder
	every.WriteString("name: wide\ntasks:\n  last:\n    run: x\n    needs: [")
	var rest strings.Builder
	for i := range workflow.MaxTasks - 1 {
		if i > 0 {
			every.WriteString(", ")
		}
		fmt.Fprintf(&every, "t%d", i)
		fmt.Fprintf(&rest, "  t%d: {run: x}\n", i)
	}
	every.WriteString("]\n")
	var env strings.Builder
	env.WriteString("name: env\ntasks:\n  a:\n    run: x\n    env: [")
	for i := 0; env.Len() < workflow.MaxFileSize-16; i++ {
		fmt.Fprintf(&env, "V%d,", i)
	}
	env.WriteString("V]\n")
	return map[string][]byte{
		"dag-10000": dagFile(workflow.MaxTasks),
		"needs-all": []byte(every.String() + rest.String()),
		"env-1MiB":  []byte(env.String()),
	}
}

func TestLargeFilesParse(t *testing.T) {
	t.Parallel()
	for name, data := range largeFiles() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if len(data) > workflow.MaxFileSize {
				t.Fatalf("%d bytes: over the bound", len(data))
			}
			d, err := workflow.Parse(data, "", "yaml")
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Order()) != len(d.Tasks) {
				t.Fatal("not every task ordered")
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"dag-10000", "needs-all", "env-1MiB"} {
		data := largeFiles()[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := workflow.Parse(data, "", "yaml"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	data := dagFile(1000)
	b.Run("dag-1000", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := workflow.Parse(data, "", "yaml"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkOrder(b *testing.B) {
	d, err := workflow.Parse(dagFile(workflow.MaxTasks), "", "yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if len(d.Order()) != len(d.Tasks) {
			b.Fatal("not every task ordered")
		}
	}
}
