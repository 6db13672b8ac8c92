package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// AddSchedule implements store.Store.
func (s *Store) AddSchedule(ctx context.Context, sc store.Schedule, replace bool) error {
	q := `INSERT INTO schedule (name, cron, tz, argv, quota, policy, missed, created_at_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO `
	if replace {
		q += `UPDATE SET cron = excluded.cron, tz = excluded.tz, argv = excluded.argv, quota = excluded.quota,
			policy = excluded.policy, missed = excluded.missed, created_at_ms = excluded.created_at_ms`
	} else {
		q += `NOTHING`
	}
	res, err := s.db.ExecContext(ctx, q, sc.Name, sc.Cron, sc.TZ, store.EncodeStrings(sc.Argv),
		store.EncodeStrings(sc.Quota), sc.PolicyJSON(), string(sc.Missed), store.MS(sc.CreatedAt))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("%w: %s", store.ErrScheduleExists, sc.Name)
	}
	return nil
}

// Schedules implements store.Store.
func (s *Store) Schedules(ctx context.Context) ([]store.Schedule, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, cron, tz, argv, quota, policy, missed, created_at_ms
		FROM schedule ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Schedule
	for rows.Next() {
		var sc store.Schedule
		var argv, quota, missed string
		var created int64
		if err := rows.Scan(&sc.Name, &sc.Cron, &sc.TZ, &argv, &quota, &sc.Policy, &missed, &created); err != nil {
			return nil, err
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
	return out, rows.Err()
}

// RemoveSchedule implements store.Store.
func (s *Store) RemoveSchedule(ctx context.Context, name string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM schedule WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("%w: schedule %s", job.ErrNotFound, name)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM schedule_slot WHERE schedule = ?`, name)
		return err
	})
}

// ClaimSlot implements store.Store.
func (s *Store) ClaimSlot(ctx context.Context, sl store.Slot) (bool, error) {
	claimed := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM schedule WHERE name = ?`, sl.Schedule).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: schedule %s", job.ErrNotFound, sl.Schedule)
		} else if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO schedule_slot (schedule, slot_at_ms, host_id, claimed_at_ms,
			result, detail, late) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (schedule, slot_at_ms) DO NOTHING`,
			sl.Schedule, store.MS(sl.At), sl.HostID, store.MS(sl.ClaimedAt), string(sl.Result), sl.Detail, sl.Late)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		claimed = n == 1
		return err
	})
	return claimed && err == nil, err
}

// FinishSlot implements store.Store.
func (s *Store) FinishSlot(ctx context.Context, schedule string, at time.Time, result store.SlotResult, detail string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE schedule_slot SET result = ?, detail = ? WHERE schedule = ? AND slot_at_ms = ?`,
		string(result), detail, schedule, store.MS(at))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("%w: slot %s of schedule %s", job.ErrNotFound, store.MSTime(at).Format(time.RFC3339), schedule)
	}
	return nil
}

// LastSlot implements store.Store.
func (s *Store) LastSlot(ctx context.Context, schedule string) (store.Slot, bool, error) {
	sl := store.Slot{Schedule: schedule}
	var at, claimed int64
	var result string
	err := s.db.QueryRowContext(ctx, `SELECT slot_at_ms, host_id, claimed_at_ms, result, detail, late
		FROM schedule_slot WHERE schedule = ? ORDER BY slot_at_ms DESC LIMIT 1`, schedule).
		Scan(&at, &sl.HostID, &claimed, &result, &sl.Detail, &sl.Late)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Slot{}, false, nil
	} else if err != nil {
		return store.Slot{}, false, err
	}
	sl.At, sl.ClaimedAt, sl.Result = store.FromMS(at), store.FromMS(claimed), store.SlotResult(result)
	return sl, true, nil
}
