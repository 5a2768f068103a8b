package ledger

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Table schema.
const (
	KeyAttribute = "pk"
	TTLAttribute = "expires_at"
)

// DefaultRetention is how long a record lives (TTL) after its last write.
const DefaultRetention = 7 * 24 * time.Hour

// MaxKeyBytes is the longest key stored as given; longer keys are stored as
// "sha256:" and their hex digest.
const MaxKeyBytes = 512

// MaxOutcomeBytes bounds an Outcome's JSON, so that a done record stays
// under DynamoDB's 400 KiB item limit with room for the other attributes.
const MaxOutcomeBytes = 380_000

// Sentinels. ErrInProgress: another delivery holds an unexpired lease on the
// key. ErrNotOwner: this ledger value holds no lease on the key (never began,
// already completed or released, or taken over after expiry). ErrEmptyKey:
// the key is empty. ErrTooLarge: an outcome's JSON exceeds MaxOutcomeBytes
// (the lease is kept; Release it or Complete with a smaller outcome).
var (
	ErrInProgress = errors.New("ledger: call in progress under another delivery")
	ErrNotOwner   = errors.New("ledger: lease not held")
	ErrEmptyKey   = errors.New("ledger: empty idempotency key")
	ErrTooLarge   = errors.New("ledger: outcome too large")
)

// Outcome is what a completed call produced: a Result, or an ErrorType (a
// wire error type) with a Message.
type Outcome struct {
	Result    json.RawMessage `json:"result,omitempty"`
	ErrorType string          `json:"error_type,omitempty"`
	Message   string          `json:"message,omitempty"`
}

// Entry is what Begin found. Done: the call completed earlier; return
// Outcome and do not call again. Otherwise the caller holds the lease and
// must Complete, Suspend or Release; TookOver reports that an expired lease
// of an earlier delivery was taken over (that delivery may have called the
// tool). Pending, when set, is the call's pending state: continue it and
// do not start it again.
type Entry struct {
	Done     bool
	Outcome  Outcome
	TookOver bool
	Pending  *Pending
}

// Pending is what a call that has not finished needs to continue: the call
// it is (Tool, ArgsDigest), the server's handle on it (TaskID for a task,
// RequestState for an input_required answer), the negotiated Version, the
// input keys still open, how many input Rounds ran, Since, when the call
// first went pending, and Answer, the pending answer last given (JSON). Its
// JSON is bounded by MaxOutcomeBytes.
type Pending struct {
	Tool         string          `json:"tool"`
	ArgsDigest   string          `json:"args_digest"`
	TaskID       string          `json:"task_id,omitempty"`
	Version      string          `json:"version,omitempty"`
	PollAfter    int             `json:"poll_after_seconds,omitempty"`
	ExpiresAt    time.Time       `json:"expires_at,omitzero"`
	RequestState string          `json:"request_state,omitempty"`
	OpenInputs   []string        `json:"open_inputs,omitempty"`
	Rounds       int             `json:"rounds,omitempty"`
	Since        time.Time       `json:"since,omitzero"`
	Approval     bool            `json:"approval,omitempty"` // waiting for an approval the catalog's policy asks for
	Answer       json.RawMessage `json:"answer,omitempty"`
}

// InProgressError is ErrInProgress with the time the other delivery's
// lease ends.
type InProgressError struct {
	Key   string
	Until time.Time
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("%v: %s leased until %s", ErrInProgress, e.Key, e.Until.UTC().Format(time.RFC3339Nano))
}

// Is reports ErrInProgress.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// encodePending marshals p within MaxOutcomeBytes.
func encodePending(key string, p Pending) ([]byte, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("ledger: suspend %s: encode pending state: %w", ref(key), err)
	}
	if len(body) > MaxOutcomeBytes {
		return nil, fmt.Errorf("%w: %s: pending state of %d bytes, at most %d", ErrTooLarge, ref(key), len(body), MaxOutcomeBytes)
	}
	return body, nil
}

// storedKey is the partition key value for key.
func storedKey(key string) (string, error) {
	if key == "" {
		return "", ErrEmptyKey
	}
	if len(key) <= MaxKeyBytes {
		return key, nil
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// ref names a key in errors and logs: as given up to 64 bytes, else by a
// digest prefix, since a long key (a task token) is a credential.
func ref(key string) string {
	if len(key) <= 64 {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// encodeOutcome marshals o within MaxOutcomeBytes.
func encodeOutcome(key string, o Outcome) ([]byte, error) {
	body, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("ledger: complete %s: encode outcome: %w", ref(key), err)
	}
	if len(body) > MaxOutcomeBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, at most %d", ErrTooLarge, ref(key), len(body), MaxOutcomeBytes)
	}
	return body, nil
}

func newOwner() string { return rand.Text() }
