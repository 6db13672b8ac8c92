package postgres

import (
	"context"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// takeResumeSlot inserts the key's first slot, or advances its next free
// time, and returns the slot's start, in one statement: the upsert locks
// the key's row, so concurrent hosts take consecutive slots.
const takeResumeSlot = `INSERT INTO resume_slot (host, principal, resource, next_us) VALUES ($1, $2, $3, $4::bigint + $5::bigint)
ON CONFLICT (host, principal, resource) DO UPDATE SET next_us = greatest(resume_slot.next_us, $4::bigint) + $5::bigint
RETURNING next_us - $5::bigint`

// TakeResumeSlot implements store.Store.
func (s *Store) TakeResumeSlot(ctx context.Context, key quota.Key, now time.Time, interval time.Duration) (time.Time, error) {
	nowUS, iv := store.SlotMicros(now, interval)
	var start int64
	if err := s.pool.QueryRow(ctx, takeResumeSlot, key.Host, key.Principal, key.Resource, nowUS, iv).Scan(&start); err != nil {
		return time.Time{}, wrapErr("take resume slot", err)
	}
	return store.FromMicros(start), nil
}
