package startup

import "testing"

func TestCPUSlots(t *testing.T) {
	tests := []struct {
		mb    int
		slots int
	}{
		{128, 1},
		{512, 1},  // 0.29 vCPU: one slot, never none
		{1768, 1}, // just under one vCPU
		{1769, 1},
		{3538, 2},
		{10240, 5},
	}
	for _, tt := range tests {
		if got := PlanMemory(tt.mb).CPUSlots(); got != tt.slots {
			t.Errorf("PlanMemory(%d).CPUSlots() = %d, want %d", tt.mb, got, tt.slots)
		}
	}
	if got := PlanMemory(512).CPU(); got < 0.289 || got > 0.2895 {
		t.Errorf("PlanMemory(512).CPU() = %v, want 512/1769", got)
	}
}
