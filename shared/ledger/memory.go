package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// Memory is a ledger in process memory with Dynamo's contract; records never
// expire. Peer returns another value on the same records, as a second
// function instance would see them. Safe for concurrent use; set Now before
// first use.
type Memory struct {
	store *memStore
	lease time.Duration

	// Now is the clock; nil means time.Now.
	Now func() time.Time

	holds holds
}

type memStore struct {
	mu      sync.Mutex
	records map[string]record
}

// NewMemory returns an empty in-memory ledger whose leases last lease.
func NewMemory(lease time.Duration) *Memory {
	return &Memory{store: &memStore{records: make(map[string]record)}, lease: lease}
}

// Peer returns a ledger on the same records with its own leases and the same
// clock.
func (m *Memory) Peer() *Memory {
	return &Memory{store: m.store, lease: m.lease, Now: m.Now}
}

func (m *Memory) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Begin behaves as Dynamo.Begin.
func (m *Memory) Begin(ctx context.Context, key string) (Entry, error) {
	pk, err := storedKey(key)
	if err != nil {
		return Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, fmt.Errorf("ledger: begin %s: %w", ref(key), err)
	}
	now := m.now()
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	old, exists := m.store.records[pk]
	switch {
	case exists && old.done:
		return Entry{Done: true, Outcome: old.outcome}, nil
	case exists && resumable(old, now):
		var p Pending
		if err := json.Unmarshal([]byte(old.pending), &p); err != nil {
			return Entry{}, fmt.Errorf("ledger: begin %s: unreadable pending state: %w", ref(key), err)
		}
		owner := newOwner()
		m.store.records[pk] = record{owner: owner, leaseUntil: now.Add(m.lease), pending: old.pending}
		m.holds.setPending(key, owner, old.pending)
		return Entry{Pending: &p, TookOver: !old.suspended}, nil
	case exists && old.leaseUntil.After(now):
		return Entry{}, &InProgressError{Key: ref(key), Until: old.leaseUntil}
	}
	owner := newOwner()
	m.store.records[pk] = record{owner: owner, leaseUntil: now.Add(m.lease)}
	m.holds.set(key, owner)
	return Entry{TookOver: exists}, nil
}

// Complete behaves as Dynamo.Complete.
func (m *Memory) Complete(ctx context.Context, key string, o Outcome) error {
	if _, err := encodeOutcome(key, o); err != nil {
		return err
	}
	return m.settle(ctx, key, "complete", func(pk, owner string) {
		m.store.records[pk] = record{done: true, owner: owner, outcome: o}
	})
}

// Release behaves as Dynamo.Release: a lease taken on a pending record
// returns it to pending.
func (m *Memory) Release(ctx context.Context, key string) error {
	raw := m.holds.pendingOf(key)
	return m.settle(ctx, key, "release", func(pk, owner string) {
		if raw != "" {
			m.store.records[pk] = record{suspended: true, owner: newOwner(), prevOwner: owner, pending: raw}
			return
		}
		delete(m.store.records, pk)
	})
}

// settle applies write to key's record if this value holds its lease. A
// release of a record already gone succeeds, as Dynamo's does.
func (m *Memory) settle(ctx context.Context, key, op string, write func(pk, owner string)) error {
	pk, err := storedKey(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ledger: %s %s: %w", op, ref(key), err)
	}
	owner, ok := m.holds.get(key)
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotOwner, ref(key))
	}
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	m.holds.drop(key, owner)
	r, ok := m.store.records[pk]
	switch {
	case !ok && op == "release":
		return nil
	case !ok || r.done || r.owner != owner:
		return fmt.Errorf("%w: %s: the lease was taken over or the record is gone", ErrNotOwner, ref(key))
	}
	write(pk, owner)
	return nil
}
