package leaderelection

import (
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/leases"
)

func TestValidateNamesWhatIsWrong(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string // a substring of the error; "": valid
	}{
		{"defaults", Config{Name: "op", Namespace: "ns"}, ""},
		{"no name", Config{Namespace: "ns"}, "--leader-elect-lease"},
		{"no namespace", Config{Name: "op"}, "--leader-elect-namespace"},
		// client-go's jitter: leases.Timing's test has the other durations.
		{"retry period too long", Config{Name: "op", Namespace: "ns", Timing: leases.Timing{RetryPeriod: 9 * time.Second}}, "renew deadline (10s) must be longer than 1.2 times the retry period (9s)"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: Validate: %v, want %q", c.name, err, c.want)
		}
	}
}
