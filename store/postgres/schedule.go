package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// AddSchedule implements store.Store.
func (s *Store) AddSchedule(ctx context.Context, sc store.Schedule, replace bool) error {
	q := `INSERT INTO schedule (name, cron, tz, argv, quota, policy, missed, created_at_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name) DO `
	if replace {
		q += `UPDATE SET cron = excluded.cron, tz = excluded.tz, argv = excluded.argv, quota = excluded.quota,
			policy = excluded.policy, missed = excluded.missed, created_at_ms = excluded.created_at_ms`
	} else {
		q += `NOTHING`
	}
	tag, err := s.pool.Exec(ctx, q, sc.Name, sc.Cron, sc.TZ, store.EncodeStrings(sc.Argv),
		store.EncodeStrings(sc.Quota), sc.PolicyJSON(), string(sc.Missed), store.MS(sc.CreatedAt))
	if err != nil {
		return wrapErr("add schedule", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", store.ErrScheduleExists, sc.Name)
	}
	return nil
}

// Schedules implements store.Store.
func (s *Store) Schedules(ctx context.Context) ([]store.Schedule, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, cron, tz, argv, quota, policy, missed, created_at_ms
		FROM schedule ORDER BY name`)
	if err != nil {
		return nil, wrapErr("schedules", err)
	}
	defer rows.Close()
	var out []store.Schedule
	for rows.Next() {
		var sc store.Schedule
		var argv, quota, missed string
		var created int64
		if err := rows.Scan(&sc.Name, &sc.Cron, &sc.TZ, &argv, &quota, &sc.Policy, &missed, &created); err != nil {
			return nil, wrapErr("schedules", err)
		}
		if sc.Argv, err = store.DecodeStrings(argv); err != nil {
			return nil, fmt.Errorf("schedule %s: argv: %w", sc.Name, err)
		}
		if sc.Quota, err = store.DecodeStrings(quota); err != nil {
			return nil, fmt.Errorf("schedule %s: quota: %w", sc.Name, err)
		}
		sc.Missed, sc.CreatedAt = store.SlotResult(missed), store.FromMS(created)
		out = append(out, sc)
	}
	return out, wrapErr("schedules", rows.Err())
}

// RemoveSchedule implements store.Store. Its slots go with it (ON DELETE
// CASCADE).
func (s *Store) RemoveSchedule(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM schedule WHERE name = $1`, name)
	if err != nil {
		return wrapErr("remove schedule", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: schedule %s", job.ErrNotFound, name)
	}
	return nil
}

// ClaimSlot implements store.Store: the primary key (schedule, slot_at_ms)
// lets one insert of every host's win; the others conflict and do nothing.
func (s *Store) ClaimSlot(ctx context.Context, sl store.Slot) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO schedule_slot (schedule, slot_at_ms, host_id, claimed_at_ms,
		result, detail, late) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (schedule, slot_at_ms) DO NOTHING`,
		sl.Schedule, store.MS(sl.At), sl.HostID, store.MS(sl.ClaimedAt), string(sl.Result), sl.Detail, sl.Late)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation: no such schedule
		return false, fmt.Errorf("%w: schedule %s", job.ErrNotFound, sl.Schedule)
	} else if err != nil {
		return false, wrapErr("claim slot", err)
	}
	return tag.RowsAffected() == 1, nil
}

// FinishSlot implements store.Store.
func (s *Store) FinishSlot(ctx context.Context, schedule string, at time.Time, result store.SlotResult, detail string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE schedule_slot SET result = $1, detail = $2 WHERE schedule = $3 AND slot_at_ms = $4`,
		string(result), detail, schedule, store.MS(at))
	if err != nil {
		return wrapErr("finish slot", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: slot %s of schedule %s", job.ErrNotFound, store.MSTime(at).Format(time.RFC3339), schedule)
	}
	return nil
}

// LastSlot implements store.Store.
func (s *Store) LastSlot(ctx context.Context, schedule string) (store.Slot, bool, error) {
	sl := store.Slot{Schedule: schedule}
	var at, claimed int64
	var result string
	err := s.pool.QueryRow(ctx, `SELECT slot_at_ms, host_id, claimed_at_ms, result, detail, late
		FROM schedule_slot WHERE schedule = $1 ORDER BY slot_at_ms DESC LIMIT 1`, schedule).
		Scan(&at, &sl.HostID, &claimed, &result, &sl.Detail, &sl.Late)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Slot{}, false, nil
	} else if err != nil {
		return store.Slot{}, false, wrapErr("last slot", err)
	}
	sl.At, sl.ClaimedAt, sl.Result = store.FromMS(at), store.FromMS(claimed), store.SlotResult(result)
	return sl, true, nil
}
