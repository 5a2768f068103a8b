package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"

	"github.com/mcpfn/mcpfn/shared/catalog"
	"github.com/mcpfn/mcpfn/shared/schedule"
)

// memTable is the due index in memory, for sweeps on a synctest clock:
// Query answers a shard's due entries in one page, UpdateItem moves
// next_due under its condition. Each request takes latency and gives up,
// writing nothing, when its context ends first; with failUndo set every
// undo fails. It records the deadline of
// each undo's context (an update moving next_due back; zero: none).
type memTable struct {
	schedule.DynamoAPI // GetItem: not used by a sweep
	latency            time.Duration
	mu                 sync.Mutex
	due                map[string]int64 // catalog id → next_due
	undoDeadlines      []time.Time
	failUndo           bool // every undo fails, writing nothing
}

func newMemTable(n int, due time.Time, latency time.Duration) *memTable {
	m := &memTable{latency: latency, due: map[string]int64{}}
	for i := range n {
		m.due[fmt.Sprintf("c%04d", i)] = due.Unix() - int64(i)
	}
	return m
}

func (m *memTable) wait(ctx context.Context) error {
	select {
	case <-time.After(m.latency):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *memTable) Query(ctx context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	kc := compared(in.KeyConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	shard := kc[catalog.DueShardAttribute].(*types.AttributeValueMemberS).Value
	now, _ := strconv.ParseInt(kc[catalog.NextDueAttribute].(*types.AttributeValueMemberN).Value, 10, 64)
	m.mu.Lock()
	defer m.mu.Unlock()
	out := &dynamodb.QueryOutput{}
	for id, nd := range m.due {
		if nd <= now && catalog.DueShard(id) == shard {
			item := key(id)
			item[catalog.NextDueAttribute] = &types.AttributeValueMemberN{Value: strconv.FormatInt(nd, 10)}
			item[catalog.IntervalAttribute] = &types.AttributeValueMemberN{Value: "3600"}
			out.Items = append(out.Items, item)
		}
	}
	return out, nil
}

func (m *memTable) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	id := in.Key[catalog.PartitionKey].(*types.AttributeValueMemberS).Value
	cond := compared(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	set := compared(in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	seen, _ := strconv.ParseInt(cond[catalog.NextDueAttribute].(*types.AttributeValueMemberN).Value, 10, 64)
	next, _ := strconv.ParseInt(set[catalog.NextDueAttribute].(*types.AttributeValueMemberN).Value, 10, 64)
	if next < seen {
		d, _ := ctx.Deadline()
		m.mu.Lock()
		m.undoDeadlines = append(m.undoDeadlines, d)
		fail := m.failUndo
		m.mu.Unlock()
		if fail {
			return nil, errors.New("throttled")
		}
	}
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if nd, ok := m.due[id]; !ok || nd != seen {
		return nil, &types.ConditionalCheckFailedException{}
	}
	m.due[id] = next
	return &dynamodb.UpdateItemOutput{}, nil
}

// stillDue returns the catalogs due at now, sorted.
func (m *memTable) stillDue(now time.Time) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, nd := range m.due {
		if nd <= now.Unix() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// slowSQS is an SQS that takes latency for each SendMessageBatch and then
// keeps every entry, also when its caller gave up waiting (the message
// reached the queue, the answer was lost). Entries whose catalog id starts
// with "refuse" it lists as failed, with "mute" in neither list.
// latencyAt, when set, gives the latency of a batch sent at a time instead.
// It counts the batches whose caller gave up before the answer (cutOff).
type slowSQS struct {
	schedule.QueueAPI // SendMessage: not used by a sweep
	latency           time.Duration
	latencyAt         func(time.Time) time.Duration
	mu                sync.Mutex
	arrived           map[string]int // catalog id → messages kept
	calls, cutOff     int
}

func (s *slowSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // not sent
	}
	latency := s.latency
	if s.latencyAt != nil {
		latency = s.latencyAt(time.Now())
	}
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	var kept []string
	for _, e := range in.Entries {
		var r schedule.Request
		if err := json.Unmarshal([]byte(aws.ToString(e.MessageBody)), &r); err != nil {
			return nil, err
		}
		switch {
		case strings.HasPrefix(r.CatalogID, "refuse"):
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), SenderFault: false})
		case strings.HasPrefix(r.CatalogID, "mute"):
		default:
			kept = append(kept, r.CatalogID)
			out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id})
		}
	}
	timer := time.NewTimer(latency)
	select {
	case <-timer.C:
	case <-ctx.Done():
		// SQS takes the batch all the same, after the caller gave up.
		s.mu.Lock()
		s.cutOff++
		s.mu.Unlock()
		go func() { <-timer.C; s.keep(kept) }()
		return nil, ctx.Err()
	}
	s.keep(kept)
	return out, nil
}

func (s *slowSQS) keep(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.arrived == nil {
		s.arrived = map[string]int{}
	}
	for _, id := range ids {
		s.arrived[id]++
	}
}

func (s *slowSQS) count() (total int, arrived map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	arrived = map[string]int{}
	for id, n := range s.arrived {
		arrived[id] = n
		total += n
	}
	return total, arrived
}

// TestSweepKeepsItsClaimsAtTheDeadline: 2,000 due catalogs, a 3 s
// budget, a second more to the invocation's end, claims taking 5 ms and
// SQS 250 ms a batch. The budget ends mid-sweep; by the end every catalog
// has reached the queue once or is still due, none both and none neither,
// and Enqueued counts what reached the queue. Successive sweeps enqueue
// every catalog exactly once.
func TestSweepKeepsItsClaimsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 2000
		start := time.Now()
		mem := newMemTable(n, start, 5*time.Millisecond)
		q := &slowSQS{latency: 250 * time.Millisecond}
		s := schedule.New(mem, "catalog", schedule.Options{})
		sender := &schedule.Sender{API: q, URL: "queue"}

		enqueued := 0
		for sweeps := 1; ; sweeps++ {
			begin := time.Now()
			ctx, cancel := context.WithDeadline(t.Context(), begin.Add(3*time.Second))
			sw, err := s.Sweep(ctx, sender, begin.Add(4*time.Second))
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(begin); took > 4*time.Second {
				t.Errorf("sweep %d took %s, past the invocation's end", sweeps, took)
			}
			time.Sleep(time.Second) // what SQS took after its caller gave up arrives
			total, arrived := q.count()
			if total-enqueued != sw.Enqueued {
				t.Errorf("sweep %d reported %d enqueued, %d reached the queue", sweeps, sw.Enqueued, total-enqueued)
			}
			enqueued = total
			due := mem.stillDue(time.Now())
			for _, id := range due {
				if arrived[id] > 0 {
					t.Errorf("sweep %d: %s reached the queue and is still due", sweeps, id)
				}
			}
			if len(due)+len(arrived) != n {
				t.Fatalf("sweep %d: %d due and %d enqueued, want %d together: claims were dropped", sweeps, len(due), len(arrived), n)
			}
			if sweeps == 1 && sw.Complete {
				t.Fatal("the first sweep completed: the budget did not end mid-sweep")
			}
			if len(due) == 0 {
				break
			}
			if sweeps == 10 {
				t.Fatalf("%d still due after %d sweeps", len(due), sweeps)
			}
		}
		_, arrived := q.count()
		for id, c := range arrived {
			if c != 1 {
				t.Errorf("%s enqueued %d times, want once", id, c)
			}
		}
		if len(arrived) != n {
			t.Errorf("%d catalogs enqueued, want %d", len(arrived), n)
		}
	})
}

// TestSweepCountsWhatSQSAccepted: of a batch, the entries SQS lists as
// failed and the one it does not list are not counted and stay due; the
// next sweep enqueues exactly them.
func TestSweepCountsWhatSQSAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := &memTable{due: map[string]int64{}}
		now := time.Now().Unix()
		for i, id := range []string{"ok-1", "ok-2", "ok-3", "refuse-1", "refuse-2", "mute-1"} {
			mem.due[id] = now - int64(i)
		}
		q := &slowSQS{}
		s := schedule.New(mem, "catalog", schedule.Options{})
		sw, err := s.Sweep(t.Context(), &schedule.Sender{API: q, URL: "queue"}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if sw.Due != 6 || sw.Enqueued != 3 || !sw.Complete {
			t.Errorf("swept %+v, want 6 due, 3 enqueued, complete", sw)
		}
		if diff := cmp.Diff([]string{"mute-1", "refuse-1", "refuse-2"}, mem.stillDue(time.Now())); diff != "" {
			t.Errorf("still due (-want +got):\n%s", diff)
		}

		next := &queue{}
		if sw, err := s.Sweep(t.Context(), next, time.Time{}); err != nil || sw.Enqueued != 3 {
			t.Errorf("the next sweep = %+v, %v; want 3 enqueued", sw, err)
		}
		if diff := cmp.Diff([]string{"mute-1", "refuse-1", "refuse-2"}, next.take()); diff != "" {
			t.Errorf("the next sweep enqueued (-want +got):\n%s", diff)
		}
	})
}

// TestEnqueueReportsEachEntry: Enqueue's error is nil only for an entry
// SQS lists as successful; a failed or unlisted entry is ErrRefused.
func TestEnqueueReportsEachEntry(t *testing.T) {
	q := &slowSQS{}
	s := &schedule.Sender{API: q, URL: "queue"}
	var reqs []schedule.Request
	for _, id := range []string{"ok-0", "refuse-0", "mute-0", "ok-1", "mute-1", "ok-2", "ok-3", "ok-4", "ok-5", "ok-6", "refuse-1", "ok-7"} {
		reqs = append(reqs, schedule.Request{CatalogID: id})
	}
	errs := s.Enqueue(t.Context(), reqs)
	if len(errs) != len(reqs) {
		t.Fatalf("%d errors for %d requests", len(errs), len(reqs))
	}
	for i, err := range errs {
		ok := strings.HasPrefix(reqs[i].CatalogID, "ok")
		if ok != (err == nil) || !ok && !errors.Is(err, schedule.ErrRefused) {
			t.Errorf("%s: %v", reqs[i].CatalogID, err)
		}
	}
	if total, _ := q.count(); total != 8 {
		t.Errorf("%d messages kept, want 8", total)
	}
}

// comparison is one "#name op :value" term of an expression.
var comparison = regexp.MustCompile(`(#\w+) (=|<=|<|>=|>) (:\w+)`)

// compared maps each attribute expr compares or sets to its value.
func compared(expr *string, names map[string]string, values map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := map[string]types.AttributeValue{}
	for _, m := range comparison.FindAllStringSubmatch(aws.ToString(expr), -1) {
		out[names[m[1]]] = values[m[3]]
	}
	return out
}
