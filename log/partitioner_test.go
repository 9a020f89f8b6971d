package log

import "testing"

func TestMurmur2_KafkaVectors(t *testing.T) {
	// Vectors from Kafka's UtilsTest and CONVENTIONS.md.
	tests := []struct {
		key  string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
		{"user-42", 1459644460},
		{"", 275646681},
	}
	for _, tt := range tests {
		if got := murmur2([]byte(tt.key)); got != tt.want {
			t.Errorf("murmur2(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}

func TestKeyPartition_MatchesJavaClient(t *testing.T) {
	if got := KeyPartition([]byte("foobar"), 12); got != 6 {
		t.Errorf("KeyPartition(foobar, 12) = %d, want 6", got)
	}
}
