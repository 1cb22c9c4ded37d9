package fakeaws

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// instanceState is the instances CreateFleet started (terminated ones stay listed, as EC2 shows them for a
// while), the injected insufficient capacity, the answered fleets by client token, and the boot of
// instances into Nodes.
type instanceState struct {
	byID         map[string]*instance
	lastID       uint64
	lastFleet    uint64
	insufficient map[offeringKey]bool
	fleets       map[string]createFleetResponse // by client token
	boot         *booter
}

// offeringKey is one instance type in one zone with one capacity type.
type offeringKey struct{ instanceType, zone, capacityType string }

// Instance is what the fake knows of one instance.
type Instance struct {
	ID, InstanceType, Zone, SubnetID, ImageID string
	// CapacityType is "spot" or "on-demand".
	CapacityType string
	State        string
	// StateReason says why a terminated instance ended: ReasonUserInitiated or ReasonSpotReclaimed.
	StateReason    string
	LaunchTime     time.Time
	Tags           map[string]string
	SecurityGroups []string
	// InstanceProfile is the name or ARN from the launch template.
	InstanceProfile string
	// LaunchTemplate is the name of the template it was launched from; UserData its base64 user data.
	LaunchTemplate, UserData string
	// MetadataHTTPTokens and MetadataHopLimit are the IMDS options it was launched with.
	MetadataHTTPTokens string
	MetadataHopLimit   int
	PrivateDNSName     string
	// CapacityReservationID is the capacity reservation it runs in ("" for none).
	CapacityReservationID string
	// Health is what DescribeInstanceStatus reports of it (all checks passing when zero).
	Health InstanceHealth
}

type instance struct{ Instance }

// Instance states as EC2 names them, with their codes.
const (
	StatePending      = "pending"
	StateRunning      = "running"
	StateShuttingDown = "shutting-down"
	StateTerminated   = "terminated"
)

var stateCodes = map[string]int{StatePending: 0, StateRunning: 16, StateShuttingDown: 32, StateTerminated: 48, "stopping": 64, "stopped": 80}

func init() {
	handleEC2("DescribeInstances", (*Server).describeInstances)
	handleEC2("TerminateInstances", (*Server).terminateInstances)
	handleEC2("CreateTags", (*Server).createTags)
}

// SetInsufficientCapacity makes CreateFleet fail (on) or stop failing (off) an offering with
// InsufficientInstanceCapacity.
func (s *Server) SetInsufficientCapacity(instanceType, zone, capacityType string, on bool) {
	s.withState(func(st *state) {
		if st.instances.insufficient == nil {
			st.instances.insufficient = map[offeringKey]bool{}
		}
		k := offeringKey{instanceType, zone, capacityType}
		if on {
			st.instances.insufficient[k] = true
		} else {
			delete(st.instances.insufficient, k)
		}
	})
}

// Instances returns every instance the fake has started, terminated ones included, by ID.
func (s *Server) Instances() []Instance {
	var out []Instance
	s.withState(func(st *state) {
		for _, in := range st.instances.byID {
			cp := in.Instance
			cp.Tags = maps.Clone(in.Tags)
			out = append(out, cp)
		}
	})
	slices.SortFunc(out, func(a, b Instance) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// RunInstance starts an instance directly (as someone outside Lathe, or a Lathe that crashed, would have),
// for tests of garbage collection. ID, State and LaunchTime are filled in when empty.
func (s *Server) RunInstance(in Instance) Instance {
	s.withState(func(st *state) { in = st.instances.add(in, s.opts.Clock.Now()) })
	return in
}

// add stores a new instance, filling in its ID, state, launch time and DNS name.
func (is *instanceState) add(in Instance, now time.Time) Instance {
	if is.byID == nil {
		is.byID = map[string]*instance{}
	}
	is.lastID++
	if in.ID == "" {
		in.ID = fmt.Sprintf("i-%017x", is.lastID)
	}
	if in.State == "" {
		in.State = StateRunning
	}
	if in.LaunchTime.IsZero() {
		in.LaunchTime = now
	}
	if in.PrivateDNSName == "" {
		in.PrivateDNSName = fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", is.lastID/250%250, is.lastID%250+1)
	}
	in.Tags = maps.Clone(in.Tags)
	if in.Tags == nil {
		in.Tags = map[string]string{}
	}
	is.byID[in.ID] = &instance{in}
	return in
}

type instanceStateResponse struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type groupIdentifier struct {
	ID string `xml:"groupId"`
}

type instanceResponse struct {
	ID              string                `xml:"instanceId"`
	ImageID         string                `xml:"imageId"`
	State           instanceStateResponse `xml:"instanceState"`
	PrivateDNSName  string                `xml:"privateDnsName"`
	InstanceType    string                `xml:"instanceType"`
	LaunchTime      string                `xml:"launchTime"`
	Zone            string                `xml:"placement>availabilityZone"`
	ZoneID          string                `xml:"placement>availabilityZoneId,omitempty"`
	SubnetID        string                `xml:"subnetId"`
	Groups          []groupIdentifier     `xml:"groupSet>item"`
	InstanceProfile *struct {
		Arn string `xml:"arn"`
	} `xml:"iamInstanceProfile,omitempty"`
	Lifecycle             string   `xml:"instanceLifecycle,omitempty"`
	Tags                  []ec2Tag `xml:"tagSet>item"`
	CapacityReservationID string   `xml:"capacityReservationId,omitempty"`
}

func (in *instance) response() instanceResponse {
	out := instanceResponse{ID: in.ID, ImageID: in.ImageID, State: instanceStateResponse{Code: stateCodes[in.State], Name: in.State},
		PrivateDNSName: in.PrivateDNSName, InstanceType: in.InstanceType, LaunchTime: in.LaunchTime.UTC().Format(time.RFC3339),
		Zone: in.Zone, SubnetID: in.SubnetID, Tags: ec2Tags(in.Tags), CapacityReservationID: in.CapacityReservationID}
	for _, g := range in.SecurityGroups {
		out.Groups = append(out.Groups, groupIdentifier{ID: g})
	}
	if in.InstanceProfile != "" {
		arn := in.InstanceProfile
		if !strings.HasPrefix(arn, "arn:") {
			arn = "arn:aws:iam::000000000000:instance-profile/" + arn
		}
		out.InstanceProfile = &struct {
			Arn string `xml:"arn"`
		}{Arn: arn}
	}
	if in.CapacityType == "spot" {
		out.Lifecycle = "spot"
	}
	return out
}

type reservation struct {
	ID        string             `xml:"reservationId"`
	OwnerID   string             `xml:"ownerId"`
	Instances []instanceResponse `xml:"instancesSet>item"`
}

type describeInstancesResponse struct {
	Reservations []reservation `xml:"reservationSet>item"`
	NextToken    string        `xml:"nextToken,omitempty"`
}

func (s *Server) describeInstances(q query) (any, error) {
	ids, filters := q.Strings("InstanceId"), filtersOf(q)
	var (
		all []instanceResponse
		err error
	)
	s.withState(func(st *state) {
		for _, id := range ids {
			if _, ok := st.instances.byID[id]; !ok {
				err = instanceNotFound(id)
				return
			}
		}
		for _, in := range st.instances.byID {
			if len(ids) > 0 && !slices.Contains(ids, in.ID) {
				continue
			}
			if !matchFilters(filters, in.Tags, in.field) {
				continue
			}
			r := in.response()
			r.ZoneID = st.zones.ids[in.Zone]
			all = append(all, r)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b instanceResponse) int { return cmp.Compare(a.ID, b.ID) })
	start, end, next, err := page(q, len(all), 1000)
	if err != nil {
		return nil, err
	}
	out := describeInstancesResponse{NextToken: next}
	for _, in := range all[start:end] {
		out.Reservations = append(out.Reservations, reservation{ID: "r-" + strings.TrimPrefix(in.ID, "i-"), OwnerID: "000000000000", Instances: []instanceResponse{in}})
	}
	return out, nil
}

// field answers DescribeInstances filters other than tags.
func (in *instance) field(name string) []string {
	switch name {
	case "instance-id":
		return []string{in.ID}
	case "instance-state-name":
		return []string{in.State}
	case "instance-type":
		return []string{in.InstanceType}
	case "availability-zone":
		return []string{in.Zone}
	case "subnet-id":
		return []string{in.SubnetID}
	case "image-id":
		return []string{in.ImageID}
	case "instance-lifecycle":
		if in.CapacityType == "spot" {
			return []string{"spot"}
		}
	}
	return nil
}

func instanceNotFound(id string) error {
	if !strings.HasPrefix(id, "i-") {
		return errorf("InvalidInstanceID.Malformed", "Invalid id: %q", id)
	}
	return errorf("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
}

type instanceStateChange struct {
	ID       string                `xml:"instanceId"`
	Current  instanceStateResponse `xml:"currentState"`
	Previous instanceStateResponse `xml:"previousState"`
}

type terminateInstancesResponse struct {
	Instances []instanceStateChange `xml:"instancesSet>item"`
}

// terminateInstances terminates at once (EC2 passes through shutting-down); terminating a terminated
// instance again is not an error. The instances' Nodes are deleted when the fake boots instances.
func (s *Server) terminateInstances(q query) (any, error) {
	ids := q.Strings("InstanceId")
	var (
		out    terminateInstancesResponse
		err    error
		boot   *booter
		killed []Instance
	)
	s.withState(func(st *state) {
		for _, id := range ids {
			if _, ok := st.instances.byID[id]; !ok {
				err = instanceNotFound(id)
				return
			}
		}
		boot = st.instances.boot
		for _, id := range ids {
			in := st.instances.byID[id]
			change := instanceStateChange{ID: id, Previous: instanceStateResponse{stateCodes[in.State], in.State}}
			if in.State != StateTerminated {
				killed = append(killed, in.Instance)
				in.StateReason = ReasonUserInitiated
				st.releaseReservation(in.CapacityReservationID)
			}
			in.State = StateTerminated
			change.Current = instanceStateResponse{stateCodes[in.State], in.State}
			out.Instances = append(out.Instances, change)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, in := range killed {
		s.AdjustSubnetIPs(in.SubnetID, 1)
		if boot != nil {
			boot.shutdown(in)
		}
	}
	return out, nil
}

type createTagsResponse struct {
	Return bool `xml:"return"`
}

// createTags tags instances and launch templates.
func (s *Server) createTags(q query) (any, error) {
	ids := q.Strings("ResourceId")
	tags := map[string]string{}
	for _, t := range q.List("Tag") {
		tags[t["Key"]] = t["Value"]
	}
	var err error
	s.withState(func(st *state) {
		for _, id := range ids {
			switch {
			case strings.HasPrefix(id, "i-"):
				if st.instances.byID[id] == nil {
					err = instanceNotFound(id)
					return
				}
			case strings.HasPrefix(id, "lt-"):
				if st.launchTemplates.byID[id] == nil {
					err = errorf("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
					return
				}
			default:
				err = errorf("InvalidID", "fakeaws tags only instances and launch templates, not %q", id)
				return
			}
		}
		for _, id := range ids {
			if in := st.instances.byID[id]; in != nil {
				maps.Copy(in.Tags, tags)
			} else if lt := st.launchTemplates.byID[id]; lt != nil {
				if lt.tags == nil {
					lt.tags = map[string]string{}
				}
				maps.Copy(lt.tags, tags)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return createTagsResponse{Return: true}, nil
}
