package sandbox

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestDataJSON(t *testing.T) {
	tests := []struct {
		name string
		in   Data
		json string
	}{
		{"text", Data("héllo\n"), `"héllo\n"`},
		{"empty", Data{}, `""`},
		{"binary", Data{0xff, 0x00, 0xfe}, `{"base64":"/wD+"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.in)
			if err != nil || string(b) != tt.json {
				t.Fatalf("marshal: %s, %v; want %s", b, err, tt.json)
			}
			var back Data
			if err := json.Unmarshal(b, &back); err != nil || !bytes.Equal(back, tt.in) {
				t.Fatalf("round trip: %q, %v", back, err)
			}
		})
	}
	for _, bad := range []string{`{"base64":"!!"}`, `{"b64":"AA=="}`, `12`, `{"base64":"AA==","x":1}`} {
		var d Data
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}

func TestResultJSONNames(t *testing.T) {
	b, _ := json.Marshal(Result{Status: StatusOK, Stdout: Data("1\n")})
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"status", "exit_code", "stdout", "stderr", "metrics", "language", "code_hash", "limits"} {
		if _, ok := m[k]; !ok {
			t.Errorf("Result JSON lacks %q: %s", k, b)
		}
	}
}
