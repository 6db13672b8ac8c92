package server

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/layoverhq/layover/job"
)

// BenchmarkPages times a render of each listing over a SQLite store of
// the test world plus 1,000 ready jobs: the jobs page reads every job of
// the state asked for and pages in memory.
func BenchmarkPages(b *testing.B) {
	w := newWorld(b, testToken)
	for i := range 1000 {
		if _, _, err := w.jobs.Submit(w.ctx, fmt.Sprintf("job-bench-%04d", i), job.Spec{Argv: []string{"true"}}); err != nil {
			b.Fatal(err)
		}
	}
	h := w.srv.Handler()
	for _, path := range []string{"/", "/waits", "/jobs", "/jobs?q=bench-09&page=1", "/jobs/job-sync-repos", "/runs/run-nightly-7", "/api/v1/jobs"} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				if rec.Code != 200 {
					b.Fatalf("%s: %d", path, rec.Code)
				}
			}
		})
	}
}
