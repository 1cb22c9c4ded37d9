package capacityreservation

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

func TestStatusMarksCapacityBlocksExpiringFortyMinutesBeforeTheirEnd(t *testing.T) {
	end := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := ec2types.CapacityReservation{
		CapacityReservationId: aws.String("cr-1"), AvailabilityZone: aws.String("us-east-1a"), InstanceType: aws.String("p5.48xlarge"),
		OwnerId: aws.String("000000000000"), InstanceMatchCriteria: ec2types.InstanceMatchCriteriaTargeted,
		ReservationType: ec2types.CapacityReservationTypeCapacityBlock, EndDate: &end,
	}
	if s, err := Status(r, end.Add(-41*time.Minute)); err != nil || s.State != "active" {
		t.Fatalf("41 min before: %+v, %v", s, err)
	}
	if s, err := Status(r, end.Add(-40*time.Minute)); err != nil || s.State != "expiring" || !s.EndTime.Time.Equal(end) {
		t.Fatalf("40 min before: %+v, %v", s, err)
	}
	r.ReservationType = ec2types.CapacityReservationTypeDefault
	if s, _ := Status(r, end.Add(-time.Minute)); s.State != "active" {
		t.Fatalf("a default reservation never expires early: %+v", s)
	}
	r.InstanceMatchCriteria = "future"
	if _, err := Status(r, end); err == nil {
		t.Fatal("an unknown match criteria is an error")
	}
}

func TestQueriesFromTerms(t *testing.T) {
	qs := queries([]awsv1.CapacityReservationSelectorTerm{{ID: "cr-1"}, {Tags: map[string]string{"a": "*"}, OwnerID: "111122223333"}, {InstanceMatchCriteria: "open"}})
	if len(qs) != 3 {
		t.Fatalf("queries = %+v", qs)
	}
	in := qs[1].input()
	var names []string
	for _, f := range in.Filters {
		names = append(names, aws.ToString(f.Name))
	}
	if len(names) != 3 || names[0] != "state" || names[1] != "owner-id" || names[2] != "tag-key" || aws.ToInt32(in.MaxResults) != 1000 {
		t.Fatalf("filters = %v", names)
	}
	if byID := qs[0].input(); byID.MaxResults != nil || byID.CapacityReservationIds[0] != "cr-1" {
		t.Fatalf("an id query takes no MaxResults: %+v", byID)
	}
}
