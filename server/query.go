package server

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"unicode"

	"github.com/layoverhq/layover/job"
)

// jobQuery is a jobs listing's filter: State ("" for every state), Q (a
// part of the job id, "" for any) and Page (from 1, PageSize jobs each).
type jobQuery struct {
	State job.State
	Q     string
	Page  int
}

const (
	// PageSize is how many jobs a page of the jobs listing holds.
	PageSize = 50
	// maxQuery bounds the id search: a job id is at most 128 bytes.
	maxQuery = 128
	// maxPage bounds the page number.
	maxPage = 1_000_000
)

var errQuery = errors.New("bad query")

// parseJobQuery reads ?state=&q=&page=. An unknown state, a search longer
// than a job id or with control characters, and a page that is not a
// number from 1 to maxPage are refused (errQuery); absent values are the
// defaults.
func parseJobQuery(v url.Values) (jobQuery, error) {
	q := jobQuery{State: job.State(v.Get("state")), Q: v.Get("q"), Page: 1}
	if q.State != "" && !q.State.Valid() {
		return jobQuery{}, fmt.Errorf("%w: unknown state (known: %v)", errQuery, job.States)
	}
	if len(q.Q) > maxQuery {
		return jobQuery{}, fmt.Errorf("%w: q is longer than a job id (%d bytes)", errQuery, maxQuery)
	}
	for _, r := range q.Q {
		if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
			return jobQuery{}, fmt.Errorf("%w: q holds a character no job id has", errQuery)
		}
	}
	if p := v.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > maxPage {
			return jobQuery{}, fmt.Errorf("%w: page is a number from 1 to %d", errQuery, maxPage)
		}
		q.Page = n
	}
	return q, nil
}

// values is q as a query string's values, defaults left out.
func (q jobQuery) values(page int) url.Values {
	v := url.Values{}
	if q.State != "" {
		v.Set("state", string(q.State))
	}
	if q.Q != "" {
		v.Set("q", q.Q)
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	return v
}
