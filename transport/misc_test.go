package transport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/transport"
)

// failingStore fails every write.
type failingStore struct{ *memStore }

func (failingStore) RecordStates(context.Context, []quota.State) error {
	return errors.New("disk full")
}

// A store that fails is logged and reported by Close; requests go on.
func TestStoreFailureIsReportedByClose(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{opts: transport.Options{Store: failingStore{newMemStore()}}})
	status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
	if err != nil || status != http.StatusOK {
		t.Fatalf("Do = %d, %v; want 200 whatever the store does", status, err)
	}
	err = b.tr.Close()
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close = %v, want the store's failure", err)
	}
	if err := b.tr.Close(); err != nil {
		t.Errorf("second Close = %v, want nil (reported once)", err)
	}
}

// rwBody is an upgraded connection's body: read and write.
type rwBody struct {
	io.Reader
	io.Writer
}

func (rwBody) Close() error { return nil }

// A 101's body (the upgraded connection) is returned untouched.
func TestSwitchingProtocolsBodyIsUntouched(t *testing.T) {
	t.Parallel()
	body := rwBody{strings.NewReader("frames"), io.Discard}
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusSwitchingProtocols, Header: http.Header{}, Body: body, Request: r}, nil
	})
	tr, err := transport.New(next, &transport.Options{Provider: transport.GitHub()})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://api.github.com/socket", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.Body.(io.ReadWriteCloser); !ok {
		t.Errorf("body is %T, want the upgraded connection", resp.Body)
	}
}
