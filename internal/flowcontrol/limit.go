package flowcontrol

import "time"

// class is the state of one class of requests: its limit, what is in
// flight, the line of waiting requests, and the latency it judges by.
type class struct {
	limit    float64
	ssthresh float64 // below it the limit grows by slow start
	initial  float64
	max      float64
	inFlight int
	// queue is the line, oldest first from head; entries whose context
	// ended stay (gone) until they reach the head.
	queue   []*waiter
	head0   int
	waiting int    // in the queue and not gone
	waited  uint64 // requests that ever waited
	// closedUntil: a Retry-After holds the class until then.
	closedUntil time.Time
	// lastCut is the seq of the last request let through before the last
	// decrease: only later requests can cause another.
	lastCut uint64

	judgeLatency bool
	srtt         time.Duration // smoothed latency, of the last few requests
	lrtt         time.Duration // long-term latency, of the last few hundred
}

func newClass(l Limits, judgeLatency bool) class {
	return class{
		limit: float64(l.Initial), initial: float64(l.Initial), max: float64(l.Max),
		ssthresh: float64(l.Max), judgeLatency: judgeLatency,
	}
}

// cap is the limit as a count of requests.
func (cs *class) cap() int { return max(1, int(cs.limit)) }

// sample judges a successful request that took rtt; demand is how many
// requests of the class were in flight (itself included) or waiting.
func (cs *class) sample(rtt time.Duration, seq, lastSeq uint64, demand int) {
	if cs.judgeLatency {
		if cs.srtt == 0 {
			cs.srtt, cs.lrtt = rtt, rtt
		} else {
			cs.srtt += (rtt - cs.srtt) / 8
			cs.lrtt += (rtt - cs.lrtt) / longWeight
		}
		if cs.srtt > time.Duration(latencyTolerance*float64(cs.lrtt))+latencySlack {
			// Latency alone does not take the limit below its initial
			// value: the server answers, only slower, and a limit kept
			// below the concurrency a plain client uses gave up
			// throughput for latency (a backlog of 20 000 objects drained
			// in 1.11x the time of a bare client-go program with 16
			// workers). Errors and timeouts still cut it down to one.
			if cs.limit > cs.initial {
				cs.cut(latencyCut, seq, lastSeq)
				cs.limit = max(cs.limit, cs.initial)
				cs.ssthresh = cs.limit
			}
			return
		}
	}
	// A limit that is not in use is not tested by the responses: growing
	// it then would let it drift to the maximum untried.
	if 2*demand < cs.cap() {
		return
	}
	if cs.limit < cs.ssthresh {
		cs.limit++
	} else {
		cs.limit += 1 / cs.limit
	}
	cs.limit = min(cs.limit, cs.max)
}

// cut decreases the limit by factor, once per round: seq is the request
// that calls for it, lastSeq the last request let through so far.
func (cs *class) cut(factor float64, seq, lastSeq uint64) {
	if seq <= cs.lastCut {
		return
	}
	cs.limit = max(1, cs.limit*factor)
	cs.ssthresh = cs.limit
	cs.lastCut = lastSeq
}

// restart sets the limit low after an outage, to grow back by slow start
// to the initial limit; requests from before the restart cut it no more.
func (cs *class) restart(lastSeq uint64) {
	cs.limit, cs.ssthresh, cs.lastCut = 1, max(cs.initial, 1), lastSeq
}

func (cs *class) push(w *waiter) {
	cs.queue = append(cs.queue, w)
	cs.waiting++
}

// head is the oldest waiting request, nil if none; gone ones are dropped.
func (cs *class) head() *waiter {
	for cs.head0 < len(cs.queue) && cs.queue[cs.head0].gone {
		cs.pop()
	}
	if cs.head0 == len(cs.queue) {
		return nil
	}
	return cs.queue[cs.head0]
}

func (cs *class) pop() {
	cs.queue[cs.head0] = nil
	cs.head0++
	if cs.head0 == len(cs.queue) {
		cs.queue, cs.head0 = cs.queue[:0], 0
	} else if cs.head0 > 64 && cs.head0*2 > len(cs.queue) {
		n := copy(cs.queue, cs.queue[cs.head0:])
		clear(cs.queue[n:])
		cs.queue, cs.head0 = cs.queue[:n], 0
	}
}
