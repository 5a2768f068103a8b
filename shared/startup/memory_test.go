package startup

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfn/mcpfn/shared/runner"
)

// TestSizingTable checks each row of docs/operations.md's sizing table
// against PlanMemory: the vCPU share (MemorySize ÷ 1769), the slots and the
// largest SQS BatchSize (at most 10) those slots fit.
func TestSizingTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	const header = "| MemorySize (MB) | vCPU (MB ÷ 1769) |"
	_, table, ok := strings.Cut(string(b), header)
	if !ok {
		t.Fatalf("docs/operations.md has no table starting %q", header)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	rows := 0
	for _, line := range strings.Split(table, "\n")[2:] { // the header's rest and the separator
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 {
			t.Fatalf("row %q: want 4 cells", line)
		}
		mbText, _, _ := strings.Cut(cells[0], " ")
		mb, err := strconv.Atoi(mbText)
		if err != nil {
			t.Fatalf("row %q: MemorySize %q", line, cells[0])
		}
		slots := runner.SlotCount(math.MaxInt, PlanMemory(mb).Budget, runner.ItemBytes)
		want := []string{fmt.Sprintf("%.2f", float64(mb)/1769), strconv.Itoa(slots), strconv.Itoa(min(slots, 10))}
		if got := cells[1:]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("row %d MB: vCPU, slots, BatchSize = %q, want %q", mb, got, want)
		}
		if strings.Contains(cells[0], "default") != (mb == DefaultMemoryMB) {
			t.Errorf("row %q: the default is %d MB", line, DefaultMemoryMB)
		}
		rows++
	}
	if rows == 0 {
		t.Fatal("the sizing table has no rows")
	}
}
