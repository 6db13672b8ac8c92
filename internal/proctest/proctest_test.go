package proctest

import "testing"

func TestRunsNoTest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"-test.run=TestX", "-test.v=true"}, false},
		{[]string{"-test.list=^Fuzz"}, true},
		{[]string{"-test.fuzzworker", "-test.fuzz=FuzzX"}, true},
		{[]string{"-test.fuzz=^FuzzX$", "-test.run=^$", "-test.fuzztime=3s"}, true},
		// Fuzzing runs the tests first unless told to run none.
		{[]string{"-test.fuzz=^FuzzX$"}, false},
		{[]string{"-test.fuzz=^FuzzX$", "-test.run=TestY"}, false},
		// A benchmark run with no test may still start binaries.
		{[]string{"-test.run=^$", "-test.bench=."}, false},
	}
	for _, tt := range tests {
		if got := runsNoTest(tt.args); got != tt.want {
			t.Errorf("runsNoTest(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestHasFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"-test.parallel=8"}, true},
		{[]string{"-test.v=true", "--test.parallel", "3"}, true},
		{[]string{"-test.paralleltime=1"}, false},
		{[]string{"-test.run=test.parallel"}, false},
		// Past "--" the arguments are the tests' own.
		{[]string{"--", "-test.parallel=8"}, false},
	}
	for _, tt := range tests {
		if got := hasFlag(tt.args, "test.parallel"); got != tt.want {
			t.Errorf("hasFlag(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}
