package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
)

// Cost bounds of a condition, in CEL's cost units (about one a basic
// operation). A condition whose worst case over any arguments a call can
// carry exceeds MaxCost is refused when compiled; one that exceeds it when
// run (the estimate is an upper bound, so only through a bug) is stopped.
const (
	MaxCost = 1_000_000
	// maxArgElems bounds any list, map or string in args: a call's
	// arguments are at most 1 MiB (runner.MaxRequestBytes), and a list
	// element takes at least two bytes ("1,").
	maxArgElems = 1 << 19
)

// celEnv is the CEL environment every condition is compiled in: one
// variable, args (the call's arguments object).
type celEnv struct{ env *cel.Env }

func newEnv() (*celEnv, error) {
	env, err := cel.NewEnv(
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserRecursionLimit(32),
		cel.ParserExpressionSizeLimit(MaxWhenBytes),
	)
	if err != nil {
		return nil, fmt.Errorf("policy: CEL environment: %w", err)
	}
	return &celEnv{env: env}, nil
}

// condition is a compiled when.
type condition struct{ prg cel.Program }

func (e *celEnv) compile(src string) (*condition, error) {
	ast, iss := e.env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("when is not valid CEL: %s", firstLine(iss.Err().Error()))
	}
	if !ast.OutputType().IsExactType(types.BoolType) {
		return nil, fmt.Errorf("when is of type %s, not bool", ast.OutputType())
	}
	est, err := e.env.EstimateCost(ast, argsSize{})
	if err != nil {
		return nil, fmt.Errorf("when: cost estimate: %w", err)
	}
	if est.Max > MaxCost {
		return nil, fmt.Errorf("when may cost up to %d, at most %d: it loops over the arguments too deeply", est.Max, MaxCost)
	}
	prg, err := e.env.Program(ast, cel.CostLimit(MaxCost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("when: %w", err)
	}
	return &condition{prg: prg}, nil
}

// errCondition is a condition that could not be evaluated: the call is
// denied (policy fails closed).
var errCondition = errors.New("its condition could not be evaluated")

// holds evaluates c over args. Its error never quotes an argument.
func (c *condition) holds(ctx context.Context, args map[string]any) (bool, error) {
	out, _, err := c.prg.ContextEval(ctx, map[string]any{"args": args})
	switch {
	case err == nil:
	case strings.Contains(err.Error(), "cost limit exceeded"):
		return false, fmt.Errorf("%w: cost limit exceeded", errCondition)
	case strings.Contains(err.Error(), "no such key"):
		return false, fmt.Errorf("%w: an argument it reads is absent (guard it with has())", errCondition)
	default:
		return false, errCondition
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, errCondition
	}
	return b, nil
}

// argsSize sizes every list, map and string reached through args at
// maxArgElems for the cost estimate.
type argsSize struct{}

func (argsSize) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if p := n.Path(); len(p) > 0 && p[0] == "args" {
		return &cost.SizeEstimate{Min: 0, Max: maxArgElems}
	}
	return nil
}

func (argsSize) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return cut(s)
}
