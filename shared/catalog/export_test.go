package catalog

// WithModelExceptionMax sets how many model-name exceptions the head
// records before Put reads the replaced version's items instead.
func WithModelExceptionMax(n int) DynamoOption { return func(s *Dynamo) { s.exceptionMax = n } }
