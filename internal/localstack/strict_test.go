package localstack

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func req(pk, sk string, del bool) types.WriteRequest {
	key := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
	if del {
		return types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key}}
	}
	return types.WriteRequest{PutRequest: &types.PutRequest{Item: key}}
}

func distinct(n int) []types.WriteRequest {
	var reqs []types.WriteRequest
	for i := range n {
		reqs = append(reqs, req("p", fmt.Sprint(i), false))
	}
	return reqs
}

func TestCheckBatch(t *testing.T) {
	tests := []struct {
		name string
		reqs []types.WriteRequest
		ok   bool
	}{
		{"25 distinct", distinct(25), true},
		{"26", distinct(26), false},
		{"put twice", []types.WriteRequest{req("p", "a", false), req("p", "a", false)}, false},
		{"put and delete", []types.WriteRequest{req("p", "a", false), req("p", "a", true)}, false},
		{"same sort key, other partition", []types.WriteRequest{req("p", "a", false), req("q", "a", false)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckBatch(&dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"t": tc.reqs}}, "pk", "sk")
			if (err == nil) != tc.ok {
				t.Errorf("CheckBatch = %v, want ok %t", err, tc.ok)
			}
		})
	}
}
