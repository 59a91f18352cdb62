package replicas

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// controller-runtime's defaults.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Timing paces a holder of Leases. Zero durations are the defaults.
type Timing struct {
	// LeaseDuration is how long after a Lease was last renewed the others
	// may take it.
	LeaseDuration time.Duration
	// RenewDeadline is how long a holder keeps trying to renew a Lease
	// before it counts it lost.
	RenewDeadline time.Duration
	// RetryPeriod is how often a holder tries again.
	RetryPeriod time.Duration
}

// WithDefaults fills the zero durations.
func (t Timing) WithDefaults() Timing {
	if t.LeaseDuration == 0 {
		t.LeaseDuration = DefaultLeaseDuration
	}
	if t.RenewDeadline == 0 {
		t.RenewDeadline = DefaultRenewDeadline
	}
	if t.RetryPeriod == 0 {
		t.RetryPeriod = DefaultRetryPeriod
	}
	return t
}

// Validate tells what is wrong with the durations, zero ones being the
// defaults: the lease duration must be longer than the renew deadline, so
// that a holder gives a Lease up before the others may take it, and the
// renew deadline longer than the retry period, or than jitter times it if
// jitter is not 0 (client-go's leader election wants its JitterFactor).
func (t Timing) Validate(jitter float64) error {
	t = t.WithDefaults()
	var errs []error
	if t.LeaseDuration <= t.RenewDeadline {
		errs = append(errs, fmt.Errorf("the lease duration (%s) must be longer than the renew deadline (%s)", t.LeaseDuration, t.RenewDeadline))
	}
	if jitter == 0 {
		if t.RenewDeadline <= t.RetryPeriod {
			errs = append(errs, fmt.Errorf("the renew deadline (%s) must be longer than the retry period (%s)", t.RenewDeadline, t.RetryPeriod))
		}
	} else if float64(t.RenewDeadline) <= jitter*float64(t.RetryPeriod) {
		errs = append(errs, fmt.Errorf("the renew deadline (%s) must be longer than %.1f times the retry period (%s)", t.RenewDeadline, jitter, t.RetryPeriod))
	}
	return errors.Join(errs...)
}

// Identity is a replica's identity: the pod's name (POD_NAME) or the host's
// name, and a random suffix so that two processes on one host differ.
func HolderIdentity() string {
	name := os.Getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return strings.TrimSpace(name) + "_" + hex.EncodeToString(b)
}
