package capacityreservation

import (
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// availability is how many more instances each reservation can take, as EC2 last reported it
// (AvailableInstanceCount) less what Lathe launched into it since, or zero once a launch found it full.
type availability struct {
	mu     sync.Mutex
	counts map[string]int
}

// sync records EC2's counts for the reservations of a fresh answer.
func (a *availability) sync(found []ec2types.CapacityReservation) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.counts == nil {
		a.counts = map[string]int{}
	}
	for _, r := range found {
		a.counts[aws.ToString(r.CapacityReservationId)] = int(aws.ToInt32(r.AvailableInstanceCount))
	}
}

// AvailableInstanceCount is how many more instances the reservation can take; false when EC2 never
// reported it.
func (p *Provider) AvailableInstanceCount(id string) (int, bool) {
	p.available.mu.Lock()
	defer p.available.mu.Unlock()
	n, ok := p.available.counts[id]
	return n, ok
}

// MarkLaunched counts an instance launched into the reservation until EC2 reports the reservation again.
func (p *Provider) MarkLaunched(id string) {
	p.available.mu.Lock()
	defer p.available.mu.Unlock()
	if n, ok := p.available.counts[id]; ok && n > 0 {
		p.available.counts[id] = n - 1
	}
}

// MarkUnavailable records that launches found the reservations full (ReservationCapacityExceeded or
// insufficient capacity) until EC2 reports them again.
func (p *Provider) MarkUnavailable(ids ...string) {
	p.available.mu.Lock()
	defer p.available.mu.Unlock()
	for _, id := range ids {
		if _, ok := p.available.counts[id]; ok {
			p.available.counts[id] = 0
		}
	}
}
