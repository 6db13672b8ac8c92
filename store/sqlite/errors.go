package sqlite

import (
	"errors"
	"fmt"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrBusy is returned when another connection held the write lock for longer
// than the busy timeout. The write did not happen; it may be tried again.
var ErrBusy = errors.New("store busy: another writer held it past the busy timeout")

// interpretError translates a driver error into this package's and store's
// sentinels, keeping the driver's error in the chain. Other errors pass
// unchanged.
func interpretError(err error) error {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff { // the primary result code
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("%w (%d ms): %w", ErrBusy, BusyTimeoutMS, err)
	}
	return err
}

// wrapErr names the operation that failed, translating driver errors.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, interpretError(err))
}
