package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name and Version are the implementation the server reports.
const (
	Name    = "mcpfn-example"
	Version = "1.0.0"
)

// newServer returns the example MCP server with its three tools:
// current_time, calculate and word_stats. now supplies the clock.
func newServer(now func() time.Time) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Version: Version}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "current_time",
		Description: "Returns the current date and time in an IANA time zone (UTC when none is given).",
	}, currentTime(now))
	mcp.AddTool(s, &mcp.Tool{
		Name:        "calculate",
		Description: "Applies add, subtract, multiply or divide to two numbers and returns the result.",
	}, calculate)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "word_stats",
		Description: "Counts the words, characters and lines of a text.",
	}, wordStats)
	return s
}

type timeIn struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA time zone such as Europe/Paris; UTC when empty"`
}

type timeOut struct {
	Time     string `json:"time" jsonschema:"RFC 3339 timestamp"`
	Timezone string `json:"timezone"`
	Weekday  string `json:"weekday"`
}

func currentTime(now func() time.Time) mcp.ToolHandlerFor[timeIn, timeOut] {
	return func(_ context.Context, _ *mcp.CallToolRequest, in timeIn) (*mcp.CallToolResult, timeOut, error) {
		name := in.Timezone
		if name == "" {
			name = "UTC"
		}
		loc, err := time.LoadLocation(name)
		if err != nil {
			return nil, timeOut{}, fmt.Errorf("unknown time zone %q", name)
		}
		t := now().In(loc)
		out := timeOut{Time: t.Format(time.RFC3339), Timezone: loc.String(), Weekday: t.Weekday().String()}
		return textResult(fmt.Sprintf("%s (%s, %s)", out.Time, out.Weekday, out.Timezone)), out, nil
	}
}

type calcIn struct {
	Op string  `json:"op" jsonschema:"one of add, subtract, multiply, divide"`
	A  float64 `json:"a"`
	B  float64 `json:"b"`
}

type calcOut struct {
	Result float64 `json:"result"`
}

var errDivideByZero = errors.New("division by zero")

func calculate(_ context.Context, _ *mcp.CallToolRequest, in calcIn) (*mcp.CallToolResult, calcOut, error) {
	var r float64
	switch in.Op {
	case "add":
		r = in.A + in.B
	case "subtract":
		r = in.A - in.B
	case "multiply":
		r = in.A * in.B
	case "divide":
		if in.B == 0 {
			return nil, calcOut{}, fmt.Errorf("%w: %v / 0", errDivideByZero, in.A)
		}
		r = in.A / in.B
	default:
		return nil, calcOut{}, fmt.Errorf("unknown op %q: use add, subtract, multiply or divide", in.Op)
	}
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return nil, calcOut{}, fmt.Errorf("%v %s %v has no finite result", in.A, in.Op, in.B)
	}
	return textResult(fmt.Sprint(r)), calcOut{Result: r}, nil
}

type statsIn struct {
	Text string `json:"text" jsonschema:"the text to count"`
}

type statsOut struct {
	Words      int `json:"words"`
	Characters int `json:"characters"`
	Lines      int `json:"lines"`
}

func wordStats(_ context.Context, _ *mcp.CallToolRequest, in statsIn) (*mcp.CallToolResult, statsOut, error) {
	out := statsOut{
		Words:      len(strings.Fields(in.Text)),
		Characters: utf8.RuneCountInString(in.Text),
	}
	if in.Text != "" {
		out.Lines = strings.Count(strings.TrimSuffix(in.Text, "\n"), "\n") + 1
	}
	return textResult(fmt.Sprintf("%d words, %d characters, %d lines", out.Words, out.Characters, out.Lines)), out, nil
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
