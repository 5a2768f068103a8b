// Command hellolambda is the smallest useful Go Lambda function: it answers
// every event with {}. It is the anchor the functions' cold starts and
// binary sizes are compared with.
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, json.RawMessage) (struct{}, error) { return struct{}{}, nil })
}
