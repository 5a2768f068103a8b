package catalog

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
)

func putReq(sk string) types.WriteRequest {
	return types.WriteRequest{PutRequest: &types.PutRequest{Item: itemKey("id", sk)}}
}

func delReq(sk string) types.WriteRequest {
	return types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: itemKey("id", sk)}}
}

func distinct(n int) []types.WriteRequest {
	reqs := make([]types.WriteRequest, n)
	for i := range reqs {
		reqs[i] = putReq(fmt.Sprint(i))
	}
	return reqs
}

func TestBatches(t *testing.T) {
	tests := []struct {
		name  string
		reqs  []types.WriteRequest
		sizes []int
	}{
		{"none", nil, nil},
		{"one", distinct(1), []int{1}},
		{"exactly a batch", distinct(25), []int{25}},
		{"one over", distinct(26), []int{25, 1}},
		{"ten thousand", distinct(10_000), slices.Repeat([]int{25}, 400)},
		{"repeat starts a batch", []types.WriteRequest{putReq("a"), putReq("b"), putReq("a")}, []int{2, 1}},
		{"put then delete of one key", []types.WriteRequest{putReq("a"), delReq("a")}, []int{1, 1}},
		{"repeat right after a full batch", append(distinct(25), putReq("0")), []int{25, 1}},
		{"same sort key, other partition", []types.WriteRequest{putReq("a"), {PutRequest: &types.PutRequest{Item: itemKey("other", "a")}}}, []int{2}},
		{"three of one key", []types.WriteRequest{putReq("a"), putReq("a"), putReq("a")}, []int{1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := batches(tc.reqs)
			var sizes []int
			var flat []types.WriteRequest
			for i, b := range got {
				sizes = append(sizes, len(b))
				if len(b) > MaxBatchItems {
					t.Errorf("batch %d has %d requests", i, len(b))
				}
				seen := map[string]bool{}
				for _, r := range b {
					if k := requestKey(r); seen[k] {
						t.Errorf("batch %d repeats key %q", i, k)
					} else {
						seen[k] = true
					}
				}
				flat = append(flat, b...)
			}
			if diff := cmp.Diff(tc.sizes, sizes); diff != "" {
				t.Errorf("batch sizes (-want +got):\n%s", diff)
			}
			if len(flat) != len(tc.reqs) {
				t.Fatalf("%d requests out, %d in", len(flat), len(tc.reqs))
			}
			for i := range flat {
				if flat[i] != tc.reqs[i] {
					t.Fatalf("request %d out of order", i)
				}
			}
		})
	}
}
