package replicas

import (
	"strings"
	"testing"
	"time"
)

func TestWithDefaultsFillsOnlyTheZeroDurations(t *testing.T) {
	got := Timing{RenewDeadline: time.Second}.WithDefaults()
	if want := (Timing{LeaseDuration: DefaultLeaseDuration, RenewDeadline: time.Second, RetryPeriod: DefaultRetryPeriod}); got != want {
		t.Errorf("WithDefaults = %+v, want %+v", got, want)
	}
}

func TestValidateTellsWhichDurationIsTooShort(t *testing.T) {
	for _, c := range []struct {
		timing Timing
		jitter float64
		want   string // a substring of the error; "": valid
	}{
		{Timing{}, 0, ""},
		{Timing{}, 1.2, ""},
		{Timing{LeaseDuration: 10 * time.Second}, 0, "lease duration (10s) must be longer than the renew deadline (10s)"},
		{Timing{RetryPeriod: 10 * time.Second}, 0, "renew deadline (10s) must be longer than the retry period (10s)"},
		{Timing{RetryPeriod: 9 * time.Second}, 1.2, "renew deadline (10s) must be longer than 1.2 times the retry period (9s)"},
		{Timing{RetryPeriod: 9 * time.Second}, 0, ""},
		{Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}, 1.2, ""},
	} {
		err := c.timing.Validate(c.jitter)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v.Validate(%v): %v, want none", c.timing, c.jitter, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v.Validate(%v): %v, want it to say %q", c.timing, c.jitter, err, c.want)
		}
	}
}

func TestIdentityIsThePodOrHostWithARandomSuffix(t *testing.T) {
	t.Setenv("POD_NAME", "op-7d9c-x2")
	a, b := HolderIdentity(), HolderIdentity()
	if !strings.HasPrefix(a, "op-7d9c-x2_") || a == b {
		t.Errorf("identities %q and %q: want the pod's name, a suffix, and two different ones", a, b)
	}
}
