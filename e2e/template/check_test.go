package template

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// visibilityFactor is the SQS visibility timeout's minimum multiple of the
// timeout of the function the queue feeds (AWS's guidance for event source
// mappings).
const visibilityFactor = 6

// retriedTypes must be retried with backoff and jitter by every Task;
// terminalTypes must be caught, never retried.
var (
	retriedTypes  = []string{"mcp_connection_failed_error", "internal_error", "Lambda.ServiceException", "Lambda.TooManyRequestsException"}
	terminalTypes = []string{"invalid_request_error", "mcp_egress_denied_error", "mcp_authentication_failed_error",
		"Runtime.ExitError", "Lambda.Unknown"} // the last two: a configuration_error at init (docs/errors.md)
)

// unscopedActions are the only action sets granted on Resource "*", each in
// a statement of its own: IAM has no resource type for them
// (docs/operations.md).
var (
	taskTokenActions   = []string{"states:SendTaskFailure", "states:SendTaskSuccess"}
	logDeliveryActions = []string{"logs:CreateLogDelivery", "logs:DeleteLogDelivery", "logs:DescribeLogGroups",
		"logs:DescribeResourcePolicies", "logs:GetLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:UpdateLogDelivery"}
	xrayActions     = []string{"xray:GetSamplingRules", "xray:GetSamplingTargets", "xray:PutTelemetryRecords", "xray:PutTraceSegments"}
	xrayOTLPActions = []string{"xray:PutSpans", "xray:PutSpansForIndexing"}
	unscopedActions = [][]string{taskTokenActions, logDeliveryActions, xrayActions, xrayOTLPActions}
)

// check returns every violated rule of the template, each a line naming the
// resource; root is the directory template paths are relative to.
func check(d doc, root string) []string {
	var p problems
	dlqOf := p.queues(d)
	p.functions(d, dlqOf, root)
	p.tables(d)
	p.stateMachines(d, root)
	p.policies(d)
	sort.Strings(p)
	return p
}

type problems []string

func (p *problems) addf(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// queues checks every queue has a DLQ (or is one) and returns queue → DLQ.
func (p *problems) queues(d doc) map[string]string {
	queues := d.resources("AWS::SQS::Queue")
	dlqOf := map[string]string{}
	for name, q := range queues {
		rp := path(q, "Properties", "RedrivePolicy")
		if rp == nil {
			continue
		}
		id, attr, ok := refName(path(rp, "deadLetterTargetArn"))
		if !ok || attr != "Arn" || queues[id] == nil {
			p.addf("queue %s: deadLetterTargetArn must be !GetAtt <queue in this template>.Arn", name)
			continue
		}
		n, err := d.number(path(rp, "maxReceiveCount"), atDefault)
		if err != nil || n < 1 {
			p.addf("queue %s: RedrivePolicy needs maxReceiveCount >= 1 (%v)", name, err)
		}
		dlqOf[name] = id
	}
	isDLQ := map[string]bool{}
	for src, dlq := range dlqOf {
		isDLQ[dlq] = true
		if path(queues[dlq], "Properties", "RedrivePolicy") != nil {
			p.addf("queue %s: a DLQ must not redrive further", dlq)
		}
		srcRet, err1 := retention(d, queues[src])
		dlqRet, err2 := retention(d, queues[dlq])
		if err1 != nil || err2 != nil || dlqRet <= srcRet {
			p.addf("queue %s: DLQ retention %ds must exceed the retention %ds of %s", dlq, dlqRet, srcRet, src)
		}
	}
	for name := range queues {
		if dlqOf[name] == "" && !isDLQ[name] {
			p.addf("queue %s: has no DLQ (RedrivePolicy) and is no queue's DLQ", name)
		}
	}
	return dlqOf
}

func retention(d doc, q map[string]any) (int, error) {
	v := path(q, "Properties", "MessageRetentionPeriod")
	if v == nil {
		return 345600, nil // the SQS default, 4 days
	}
	n, err := d.number(v, atDefault)
	return int(n), err
}

func (p *problems) functions(d doc, dlqOf map[string]string, root string) {
	queues := d.resources("AWS::SQS::Queue")
	makefiles, _ := filepath.Glob(filepath.Join(root, "mk", "*.mk"))
	var mk strings.Builder
	for _, f := range makefiles {
		b, _ := os.ReadFile(f)
		mk.Write(b)
	}
	for name, fn := range d.resources("AWS::Serverless::Function") {
		if got := d.functionProp(fn, "Runtime"); got != "provided.al2023" {
			p.addf("function %s: Runtime %v, want provided.al2023", name, got)
		}
		if got, _ := d.functionProp(fn, "Architectures").([]any); !slices.Equal(got, []any{"arm64"}) {
			p.addf("function %s: Architectures %v, want [arm64]", name, got)
		}
		if got := path(fn, "Metadata", "BuildMethod"); got != "makefile" {
			p.addf("function %s: Metadata.BuildMethod %v, want makefile", name, got)
		} else if !strings.Contains(mk.String(), "\nbuild-"+name+":") {
			p.addf("function %s: no build-%s target in mk/*.mk", name, name)
		}
		if got := d.functionProp(fn, "LoggingConfig", "LogFormat"); got != "JSON" {
			p.addf("function %s: LoggingConfig.LogFormat %v, want JSON", name, got)
		}

		timeout, err := d.number(d.functionProp(fn, "Timeout"), atMax)
		if err != nil {
			p.addf("function %s: Timeout: %v", name, err)
			continue
		}
		op, err1 := d.duration(fn, "MCPFN_OPERATION_TIMEOUT")
		reserve, err2 := d.duration(fn, "MCPFN_RESERVE")
		if err1 != nil || err2 != nil {
			p.addf("function %s: budgets: %v %v", name, err1, err2)
			continue
		}
		fnTimeout := time.Duration(timeout) * time.Second
		if fnTimeout <= op+reserve {
			p.addf("function %s: timeout %s must exceed operation timeout %s + largest reserve %s", name, fnTimeout, op, reserve)
		}

		events, _ := path(fn, "Properties", "Events").(map[string]any)
		for evName, ev := range events {
			if path(ev, "Type") != "SQS" {
				continue
			}
			where := fmt.Sprintf("function %s event %s", name, evName)
			qid, attr, ok := refName(path(ev, "Properties", "Queue"))
			if !ok || attr != "Arn" || queues[qid] == nil {
				p.addf("%s: Queue must be !GetAtt <queue in this template>.Arn", where)
				continue
			}
			vis, err := d.number(path(queues[qid], "Properties", "VisibilityTimeout"), atDefault)
			if err != nil {
				p.addf("queue %s: VisibilityTimeout: %v", qid, err)
			} else if vis < visibilityFactor*timeout {
				p.addf("queue %s: visibility timeout %vs must be at least %d x function %s timeout %vs", qid, vis, visibilityFactor, name, timeout)
			}
			types, _ := path(ev, "Properties", "FunctionResponseTypes").([]any)
			if !slices.Contains(types, any("ReportBatchItemFailures")) {
				p.addf("%s: FunctionResponseTypes must contain ReportBatchItemFailures", where)
			}
			batch, err1 := d.number(path(ev, "Properties", "BatchSize"), atMax)
			conc, err2 := d.number(d.functionProp(fn, "Environment", "Variables", "MCPFN_BATCH_CONCURRENCY"), atMax)
			if err1 != nil || err2 != nil || conc > batch {
				p.addf("%s: the largest MCPFN_BATCH_CONCURRENCY %v must not exceed BatchSize %v (%v, %v)", where, conc, batch, err1, err2)
			}
			if mc, err := d.number(path(ev, "Properties", "ScalingConfig", "MaximumConcurrency"), atMax); err != nil || mc < 2 || mc > 1000 {
				p.addf("%s: ScalingConfig.MaximumConcurrency must be bounded in [2, 1000] (%v, %v)", where, mc, err)
			}
			dlqID, _, _ := refName(d.functionProp(fn, "Environment", "Variables", "MCPFN_DLQ_URL"))
			if dlqID == "" || dlqID != dlqOf[qid] {
				p.addf("%s: MCPFN_DLQ_URL must be !Ref %q, the DLQ of %s (got %q)", where, dlqOf[qid], qid, dlqID)
			}
		}
	}
}

// duration resolves a function environment variable (own, else Globals) as a
// Go duration, using the largest value its parameters allow.
func (d doc) duration(fn map[string]any, env string) (time.Duration, error) {
	v := d.functionProp(fn, "Environment", "Variables", env)
	if v == nil {
		return 0, fmt.Errorf("%s is not set", env)
	}
	r, err := d.resolve(v, atMax)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", env, err)
	}
	s, _ := r.(string)
	dur, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", env, err)
	}
	return dur, nil
}

func (p *problems) tables(d doc) {
	for name, t := range d.resources("AWS::DynamoDB::Table") {
		props := path(t, "Properties")
		if got := path(props, "BillingMode"); got != "PAY_PER_REQUEST" {
			p.addf("table %s: BillingMode %v, want PAY_PER_REQUEST", name, got)
		}
		if got := path(props, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"); got != true {
			p.addf("table %s: point-in-time recovery must be enabled", name)
		}
		if got := path(props, "TimeToLiveSpecification", "Enabled"); got != true && name != "AuditTable" { // audit entries are kept
			p.addf("table %s: TTL must be enabled", name)
		}
	}
}

var placeholder = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

func (p *problems) stateMachines(d doc, root string) {
	for name, sm := range d.resources("AWS::Serverless::StateMachine") {
		uri, _ := path(sm, "Properties", "DefinitionUri").(string)
		b, err := os.ReadFile(filepath.Join(root, uri))
		if err != nil {
			p.addf("state machine %s: DefinitionUri: %v", name, err)
			continue
		}
		subs, _ := path(sm, "Properties", "DefinitionSubstitutions").(map[string]any)
		for _, m := range placeholder.FindAllStringSubmatch(string(b), -1) {
			if subs[m[1]] == nil {
				p.addf("state machine %s: ${%s} has no DefinitionSubstitutions entry", name, m[1])
			}
		}
		var def map[string]any
		if err := json.Unmarshal(b, &def); err != nil {
			p.addf("state machine %s: %s: %v", name, uri, err)
			continue
		}
		p.tasks(name, def)
	}
}

// tasks checks the Retry and Catch of every Task state, nested ones included.
func (p *problems) tasks(sm string, def map[string]any) {
	states, _ := def["States"].(map[string]any)
	for name, s := range states {
		st, _ := s.(map[string]any)
		for _, key := range []string{"ItemProcessor", "Iterator"} {
			if sub, ok := st[key].(map[string]any); ok {
				p.tasks(sm, sub)
			}
		}
		for _, br := range asSlice(st["Branches"]) {
			if sub, ok := br.(map[string]any); ok {
				p.tasks(sm, sub)
			}
		}
		if st["Type"] != "Task" || waitsOnQueue(st) {
			continue // an SQS waitForTaskToken fails only as the platform answers
		}
		where := fmt.Sprintf("state machine %s task %s", sm, name)
		for _, typ := range retriedTypes {
			r := matching(st["Retry"], typ)
			if r == nil {
				p.addf("%s: %s is not retried", where, typ)
				continue
			}
			if r["JitterStrategy"] != "FULL" {
				p.addf("%s: retry of %s needs JitterStrategy FULL", where, typ)
			}
			if rate, _ := r["BackoffRate"].(float64); rate <= 1 {
				p.addf("%s: retry of %s needs BackoffRate > 1", where, typ)
			}
			if n, _ := r["MaxAttempts"].(float64); n < 2 {
				p.addf("%s: retry of %s needs MaxAttempts >= 2", where, typ)
			}
		}
		for _, typ := range terminalTypes {
			if r := matching(st["Retry"], typ); r != nil && r["MaxAttempts"] != float64(0) {
				p.addf("%s: terminal %s must not be retried", where, typ)
			}
			if matching(st["Catch"], typ) == nil {
				p.addf("%s: terminal %s is not caught", where, typ)
			}
		}
	}
}

// waitsOnQueue reports whether a Task state is an SQS integration (the
// call machine's input requests), whose failures are the platform's answer.
func waitsOnQueue(st map[string]any) bool {
	r, _ := st["Resource"].(string)
	return strings.HasPrefix(r, "arn:aws:states:::sqs:")
}

// matching returns the first retrier or catcher whose ErrorEquals names typ
// or a wildcard that covers it.
func matching(list any, typ string) map[string]any {
	for _, e := range asSlice(list) {
		m, _ := e.(map[string]any)
		for _, name := range asSlice(m["ErrorEquals"]) {
			if name == typ || name == "States.ALL" || name == "States.TaskFailed" {
				return m
			}
		}
	}
	return nil
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// policies checks every inline IAM statement: no action wildcards, no
// NotAction or NotResource, task-token actions only on Resource "*", and
// Resource "*" only in a statement granting exactly one of unscopedActions.
func (p *problems) policies(d doc) {
	rs, _ := d["Resources"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(rs)) {
		for _, st := range statements(rs[name]) {
			p.statement(name, st)
		}
	}
}

func (p *problems) statement(res string, st map[string]any) {
	where := fmt.Sprintf("%s statement %v", res, st["Sid"])
	for _, k := range []string{"NotAction", "NotResource", "NotPrincipal"} {
		if _, ok := st[k]; ok {
			p.addf("%s: %s is not allowed", where, k)
		}
	}
	var actions []string
	for _, a := range oneOrMany(st["Action"]) {
		s, _ := a.(string)
		if strings.Contains(s, "*") {
			p.addf("%s: action wildcard %q", where, s)
		}
		actions = append(actions, s)
	}
	slices.Sort(actions)
	resources := oneOrMany(st["Resource"])
	wildcard := slices.ContainsFunc(resources, isWildcard)
	tokenActions := slices.ContainsFunc(actions, func(a string) bool { return slices.Contains(taskTokenActions, a) })
	switch {
	case wildcard:
		var extra []string
		for k := range st {
			if !slices.Contains([]string{"Sid", "Effect", "Action", "Resource"}, k) {
				extra = append(extra, k)
			}
		}
		slices.Sort(extra)
		unscoped := slices.ContainsFunc(unscopedActions, func(set []string) bool { return slices.Equal(actions, set) })
		if !unscoped || len(resources) != 1 || st["Effect"] != "Allow" || len(extra) > 0 {
			p.addf(`%s: Resource "*" only in an Allow statement of its own for exactly one of %v; got actions %v, resources %v, keys %v`,
				where, unscopedActions, actions, resources, extra)
		}
	case tokenActions:
		p.addf(`%s: %v take no resource-level scoping: grant them on Resource "*", not %v`, where, taskTokenActions, resources)
	}
}

// statements returns the inline policy statements of a resource: a role's
// Policies, a policy's PolicyDocument, and documents in a SAM Policies list;
// both branches of an Fn::If count. SAM policy templates are skipped.
func statements(r any) []map[string]any {
	var docs []any
	if d := path(r, "Properties", "PolicyDocument"); d != nil {
		docs = append(docs, d)
	}
	for _, pol := range oneOrMany(path(r, "Properties", "Policies")) {
		if d := path(pol, "PolicyDocument"); d != nil {
			docs = append(docs, d)
		} else if path(pol, "Statement") != nil {
			docs = append(docs, pol)
		}
	}
	var out []map[string]any
	for _, d := range docs {
		for _, st := range oneOrMany(path(d, "Statement")) {
			out = append(out, branches(st)...)
		}
	}
	return out
}

// branches returns v's statement maps, looking into both values of an Fn::If.
func branches(v any) []map[string]any {
	if args := asSlice(path(v, "Fn::If")); len(args) == 3 {
		return append(branches(args[1]), branches(args[2])...)
	}
	if m, ok := v.(map[string]any); ok && path(m, "Ref") == nil {
		return []map[string]any{m}
	}
	return nil
}

// oneOrMany returns a list as is and a single value as a one-element list.
func oneOrMany(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	default:
		return []any{v}
	}
}

// isWildcard reports whether a Resource value is "*", literally or via !Sub.
func isWildcard(v any) bool {
	if s, ok := v.(string); ok {
		return s == "*"
	}
	if s, ok := path(v, "Fn::Sub").(string); ok {
		return s == "*"
	}
	return false
}
