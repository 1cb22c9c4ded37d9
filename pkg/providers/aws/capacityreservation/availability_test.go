package capacityreservation

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestAvailabilityFollowsEC2AndLathesLaunches(t *testing.T) {
	p := &Provider{}
	if _, ok := p.AvailableInstanceCount("cr-1"); ok {
		t.Fatal("a reservation EC2 never reported has a count")
	}
	p.available.sync([]ec2types.CapacityReservation{{CapacityReservationId: aws.String("cr-1"), AvailableInstanceCount: aws.Int32(2)}})
	p.MarkLaunched("cr-1")
	if n, ok := p.AvailableInstanceCount("cr-1"); !ok || n != 1 {
		t.Fatalf("after a launch: %d, %v; want 1", n, ok)
	}
	p.MarkLaunched("cr-1")
	p.MarkLaunched("cr-1")
	if n, _ := p.AvailableInstanceCount("cr-1"); n != 0 {
		t.Fatalf("the count went below zero: %d", n)
	}
	p.available.sync([]ec2types.CapacityReservation{{CapacityReservationId: aws.String("cr-1"), AvailableInstanceCount: aws.Int32(3)}})
	p.MarkUnavailable("cr-1", "cr-unknown")
	if n, _ := p.AvailableInstanceCount("cr-1"); n != 0 {
		t.Fatalf("after a full launch: %d, want 0", n)
	}
	if _, ok := p.AvailableInstanceCount("cr-unknown"); ok {
		t.Fatal("marking an unknown reservation made it known")
	}
}
