package sqlite

import (
	"context"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// takeResumeSlot inserts the key's first slot, or advances its next free
// time, and returns the slot's start, in one statement.
const takeResumeSlot = `INSERT INTO resume_slot (host, principal, resource, next_us) VALUES (?1, ?2, ?3, ?4 + ?5)
ON CONFLICT (host, principal, resource) DO UPDATE SET next_us = max(resume_slot.next_us, ?4) + ?5
RETURNING next_us - ?5`

// TakeResumeSlot implements store.Store. The slots the resumes of one
// reset take at once share commits (groupcommit.go), one fsync for many.
func (s *Store) TakeResumeSlot(ctx context.Context, key quota.Key, now time.Time, interval time.Duration) (time.Time, error) {
	nowUS, iv := store.SlotMicros(now, interval)
	var start int64
	err := s.write(ctx, func(b *batch) error {
		return b.QueryRow(takeResumeSlot, key.Host, key.Principal, key.Resource, nowUS, iv).Scan(&start)
	})
	if err != nil {
		return time.Time{}, wrapErr("take resume slot", err)
	}
	return store.FromMicros(start), nil
}
