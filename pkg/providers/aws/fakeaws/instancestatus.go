package fakeaws

import (
	"cmp"
	"slices"
	"time"
)

// InstanceHealth is what EC2's status checks say of an instance: the instance and system checks
// ("ok" when empty, or "impaired"), since when a failing check has failed, and the codes of the
// maintenance events scheduled for it (system-reboot, instance-retirement, ...).
type InstanceHealth struct {
	InstanceStatus, SystemStatus string
	ImpairedSince                time.Time
	ScheduledEvents              []string
}

// Status check summaries as EC2 names them.
const (
	StatusOK       = "ok"
	StatusImpaired = "impaired"
)

func init() { handleEC2("DescribeInstanceStatus", (*Server).describeInstanceStatus) }

// SetInstanceHealth sets what DescribeInstanceStatus reports of the instance; false when there is no such
// instance.
func (s *Server) SetInstanceHealth(id string, h InstanceHealth) bool {
	found := false
	s.withState(func(st *state) {
		if in, ok := st.instances.byID[id]; ok {
			in.Health = h
			found = true
		}
	})
	return found
}

type statusDetail struct {
	Name          string `xml:"name"`
	Status        string `xml:"status"`
	ImpairedSince string `xml:"impairedSince,omitempty"`
}

type statusSummary struct {
	Status  string         `xml:"status"`
	Details []statusDetail `xml:"details>item"`
}

type statusEvent struct {
	Code      string `xml:"code"`
	NotBefore string `xml:"notBefore"`
}

type instanceStatusResponse struct {
	ID             string                `xml:"instanceId"`
	Zone           string                `xml:"availabilityZone"`
	State          instanceStateResponse `xml:"instanceState"`
	InstanceStatus statusSummary         `xml:"instanceStatus"`
	SystemStatus   statusSummary         `xml:"systemStatus"`
	Events         []statusEvent         `xml:"eventsSet>item"`
}

type describeInstanceStatusResponse struct {
	Statuses  []instanceStatusResponse `xml:"instanceStatusSet>item"`
	NextToken string                   `xml:"nextToken,omitempty"`
}

// describeInstanceStatus answers for running instances (EC2's default without IncludeAllInstances),
// with the filters instance-id, availability-zone, instance-status.status, system-status.status and
// event.code.
func (s *Server) describeInstanceStatus(q query) (any, error) {
	ids, filters := q.Strings("InstanceId"), filtersOf(q)
	var all []instanceStatusResponse
	var err error
	s.withState(func(st *state) {
		for _, id := range ids {
			if _, ok := st.instances.byID[id]; !ok {
				err = instanceNotFound(id)
				return
			}
		}
		for _, in := range st.instances.byID {
			if in.State != StateRunning || len(ids) > 0 && !slices.Contains(ids, in.ID) {
				continue
			}
			if !matchFilters(filters, nil, in.statusField) {
				continue
			}
			all = append(all, in.statusResponse())
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b instanceStatusResponse) int { return cmp.Compare(a.ID, b.ID) })
	start, end, next, err := page(q, len(all), 1000)
	if err != nil {
		return nil, err
	}
	return describeInstanceStatusResponse{Statuses: all[start:end], NextToken: next}, nil
}

func (in *instance) statusField(name string) []string {
	switch name {
	case "instance-id":
		return []string{in.ID}
	case "availability-zone":
		return []string{in.Zone}
	case "instance-state-name":
		return []string{in.State}
	case "instance-status.status":
		return []string{summary(in.Health.InstanceStatus)}
	case "system-status.status":
		return []string{summary(in.Health.SystemStatus)}
	case "event.code":
		return in.Health.ScheduledEvents
	}
	return nil
}

func summary(status string) string { return cmp.Or(status, StatusOK) }

func (in *instance) statusResponse() instanceStatusResponse {
	check := func(status string) statusSummary {
		out := statusSummary{Status: summary(status)}
		detail := statusDetail{Name: "reachability", Status: "passed"}
		if out.Status == StatusImpaired {
			detail.Status = "failed"
			detail.ImpairedSince = in.Health.ImpairedSince.UTC().Format(time.RFC3339)
		}
		out.Details = []statusDetail{detail}
		return out
	}
	out := instanceStatusResponse{ID: in.ID, Zone: in.Zone, State: instanceStateResponse{Code: stateCodes[in.State], Name: in.State},
		InstanceStatus: check(in.Health.InstanceStatus), SystemStatus: check(in.Health.SystemStatus)}
	for _, code := range in.Health.ScheduledEvents {
		out.Events = append(out.Events, statusEvent{Code: code, NotBefore: in.LaunchTime.UTC().Format(time.RFC3339)})
	}
	return out
}
