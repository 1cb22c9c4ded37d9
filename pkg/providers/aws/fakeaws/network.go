package fakeaws

import (
	"fmt"
	"sort"
	"time"
)

// networkState is the region's VPCs, subnets, security groups and capacity reservations, by ID.
type networkState struct {
	vpcs                 map[string]bool
	subnets              map[string]*Subnet
	securityGroups       map[string]*SecurityGroup
	capacityReservations map[string]*CapacityReservation
	// next numbers the IDs the fake hands out.
	next int
}

// Account is the fake's own AWS account ID: the owner of what it creates.
const Account = "000000000000"

// Subnet is a subnet of the fake region.
type Subnet struct {
	// ID is assigned by AddSubnet when empty.
	ID    string
	VPCID string
	// Zone is the subnet's availability zone name; its zone ID comes from the region's zones.
	Zone string
	CIDR string
	// AvailableIPs is the subnet's free IPv4 address count.
	AvailableIPs int
	Tags         map[string]string
}

// SecurityGroup is a security group of the fake region.
type SecurityGroup struct {
	// ID is assigned by AddSecurityGroup when empty.
	ID          string
	Name        string
	Description string
	VPCID       string
	Tags        map[string]string
}

// CapacityReservation is an on-demand capacity reservation (or capacity block) of the fake region.
type CapacityReservation struct {
	// ID is assigned by AddCapacityReservation when empty.
	ID           string
	OwnerID      string
	InstanceType string
	Zone         string
	Platform     string
	Total        int
	Available    int
	// State is active unless set (expired, cancelled, pending, ...).
	State string
	// InstanceMatchCriteria is open or targeted (default open).
	InstanceMatchCriteria string
	// ReservationType is default or capacity-block (default default).
	ReservationType string
	Interruptible   bool
	StartDate       time.Time
	EndDate         *time.Time
	Tags            map[string]string
}

func init() {
	seeders = append(seeders, func(s *Server) {
		s.state.network = networkState{
			vpcs: map[string]bool{}, subnets: map[string]*Subnet{}, securityGroups: map[string]*SecurityGroup{},
			capacityReservations: map[string]*CapacityReservation{},
		}
	})
	handleEC2("DescribeSubnets", (*Server).describeSubnets)
	handleEC2("DescribeSecurityGroups", (*Server).describeSecurityGroups)
	handleEC2("DescribeCapacityReservations", (*Server).describeCapacityReservations)
}

func (n *networkState) newID(prefix string) string {
	n.next++
	return fmt.Sprintf("%s-%017x", prefix, n.next)
}

// AddVPC creates a VPC and returns its ID.
func (s *Server) AddVPC() string {
	var id string
	s.withState(func(st *state) {
		id = st.network.newID("vpc")
		st.network.vpcs[id] = true
	})
	return id
}

// AddSubnet adds a subnet (an ID is assigned when sub.ID is empty) and returns it as stored.
func (s *Server) AddSubnet(sub Subnet) Subnet {
	s.withState(func(st *state) {
		if sub.ID == "" {
			sub.ID = st.network.newID("subnet")
		}
		sub.Tags = copyTags(sub.Tags)
		st.network.subnets[sub.ID] = &sub
	})
	return sub
}

// SubnetByID returns a subnet of the region.
func (s *Server) SubnetByID(id string) (Subnet, bool) {
	var (
		out Subnet
		ok  bool
	)
	s.withState(func(st *state) {
		var sub *Subnet
		if sub, ok = st.network.subnets[id]; ok {
			out = *sub
			out.Tags = copyTags(sub.Tags)
		}
	})
	return out, ok
}

// AdjustSubnetIPs changes a subnet's free IP count by delta (negative when instances take addresses),
// never below zero, and returns the new count.
func (s *Server) AdjustSubnetIPs(id string, delta int) int {
	var n int
	s.withState(func(st *state) {
		if sub, ok := st.network.subnets[id]; ok {
			sub.AvailableIPs = max(sub.AvailableIPs+delta, 0)
			n = sub.AvailableIPs
		}
	})
	return n
}

// SetSubnetTags replaces a subnet's tags (so tests can make a selector stop or start matching).
func (s *Server) SetSubnetTags(id string, tags map[string]string) {
	s.withState(func(st *state) {
		if sub, ok := st.network.subnets[id]; ok {
			sub.Tags = copyTags(tags)
		}
	})
}

// AddSecurityGroup adds a security group (an ID is assigned when sg.ID is empty) and returns it as stored.
func (s *Server) AddSecurityGroup(sg SecurityGroup) SecurityGroup {
	s.withState(func(st *state) {
		if sg.ID == "" {
			sg.ID = st.network.newID("sg")
		}
		sg.Tags = copyTags(sg.Tags)
		st.network.securityGroups[sg.ID] = &sg
	})
	return sg
}

// AddCapacityReservation adds a capacity reservation (an ID is assigned when cr.ID is empty) and returns it
// as stored.
func (s *Server) AddCapacityReservation(cr CapacityReservation) CapacityReservation {
	s.withState(func(st *state) {
		if cr.ID == "" {
			cr.ID = st.network.newID("cr")
		}
		if cr.OwnerID == "" {
			cr.OwnerID = Account
		}
		if cr.State == "" {
			cr.State = "active"
		}
		if cr.InstanceMatchCriteria == "" {
			cr.InstanceMatchCriteria = "open"
		}
		if cr.ReservationType == "" {
			cr.ReservationType = "default"
		}
		if cr.Platform == "" {
			cr.Platform = "Linux/UNIX"
		}
		cr.Tags = copyTags(cr.Tags)
		st.network.capacityReservations[cr.ID] = &cr
	})
	return cr
}

// ClusterNetwork is what SeedClusterNetwork created.
type ClusterNetwork struct {
	VPCID           string
	SubnetIDs       []string
	SecurityGroupID string
	Role            string
}

// SeedClusterNetwork sets up what the tutorial's EC2NodeClass for the cluster needs: a VPC, one subnet per
// zone and a security group, all tagged karpenter.sh/discovery=<cluster>, and the node role
// KarpenterNodeRole-<cluster>.
func (s *Server) SeedClusterNetwork(cluster string) ClusterNetwork {
	out := ClusterNetwork{VPCID: s.AddVPC(), Role: "KarpenterNodeRole-" + cluster}
	tags := map[string]string{"karpenter.sh/discovery": cluster, "kubernetes.io/cluster/" + cluster: "shared"}
	for i, zone := range s.Zones() {
		sub := s.AddSubnet(Subnet{
			VPCID: out.VPCID, Zone: zone, CIDR: fmt.Sprintf("10.0.%d.0/20", i*16), AvailableIPs: 4091,
			Tags: mergeTags(tags, map[string]string{"Name": cluster + "-private-" + zone}),
		})
		out.SubnetIDs = append(out.SubnetIDs, sub.ID)
	}
	out.SecurityGroupID = s.AddSecurityGroup(SecurityGroup{
		Name: "eks-cluster-sg-" + cluster, Description: "EKS created security group for " + cluster, VPCID: out.VPCID,
		Tags: mergeTags(tags, map[string]string{"Name": "eks-cluster-sg-" + cluster}),
	}).ID
	s.AddRole(out.Role)
	return out
}

func copyTags(tags map[string]string) map[string]string {
	out := make(map[string]string, len(tags))
	for k, v := range tags {
		out[k] = v
	}
	return out
}

func mergeTags(a, b map[string]string) map[string]string {
	out := copyTags(a)
	for k, v := range b {
		out[k] = v
	}
	return out
}

// sortedKeys lists a map's keys in order, so that answers come in a stable order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type subnetItem struct {
	SubnetID     string   `xml:"subnetId"`
	SubnetArn    string   `xml:"subnetArn"`
	State        string   `xml:"state"`
	VPCID        string   `xml:"vpcId"`
	OwnerID      string   `xml:"ownerId"`
	CIDRBlock    string   `xml:"cidrBlock"`
	AvailableIPs int      `xml:"availableIpAddressCount"`
	Zone         string   `xml:"availabilityZone"`
	ZoneID       string   `xml:"availabilityZoneId"`
	DefaultForAz bool     `xml:"defaultForAz"`
	MapPublicIP  bool     `xml:"mapPublicIpOnLaunch"`
	Tags         []ec2Tag `xml:"tagSet>item"`
}

type describeSubnetsResponse struct {
	Subnets   []subnetItem `xml:"subnetSet>item"`
	NextToken string       `xml:"nextToken,omitempty"`
}

func (s *Server) describeSubnets(q query) (any, error) {
	filters, ids := filtersOf(q), q.Strings("SubnetId")
	var (
		matched []subnetItem
		missing string
	)
	s.withState(func(st *state) {
		missing = firstMissing(ids, st.network.subnets)
		for _, id := range sortedKeys(st.network.subnets) {
			sub := st.network.subnets[id]
			zoneID := st.zones.ids[sub.Zone]
			if len(ids) > 0 && !contains(ids, id) {
				continue
			}
			if !matchFilters(filters, sub.Tags, func(name string) []string {
				switch name {
				case "subnet-id":
					return []string{sub.ID}
				case "availability-zone":
					return []string{sub.Zone}
				case "availability-zone-id":
					return []string{zoneID}
				case "vpc-id":
					return []string{sub.VPCID}
				case "cidr-block", "cidr":
					return []string{sub.CIDR}
				case "state":
					return []string{"available"}
				case "owner-id":
					return []string{Account}
				}
				return nil
			}) {
				continue
			}
			matched = append(matched, subnetItem{
				SubnetID: sub.ID, SubnetArn: "arn:aws:ec2:" + s.opts.Region + ":" + Account + ":subnet/" + sub.ID,
				State: "available", VPCID: sub.VPCID, OwnerID: Account, CIDRBlock: sub.CIDR,
				AvailableIPs: sub.AvailableIPs, Zone: sub.Zone, ZoneID: zoneID, Tags: ec2Tags(sub.Tags),
			})
		}
	})
	if missing != "" {
		return nil, errorf("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", missing)
	}
	start, end, next, err := page(q, len(matched), 1000)
	if err != nil {
		return nil, err
	}
	return describeSubnetsResponse{Subnets: matched[start:end], NextToken: next}, nil
}

type securityGroupItem struct {
	OwnerID     string   `xml:"ownerId"`
	GroupID     string   `xml:"groupId"`
	GroupName   string   `xml:"groupName"`
	Description string   `xml:"groupDescription"`
	VPCID       string   `xml:"vpcId"`
	Arn         string   `xml:"securityGroupArn"`
	Tags        []ec2Tag `xml:"tagSet>item"`
}

type describeSecurityGroupsResponse struct {
	SecurityGroups []securityGroupItem `xml:"securityGroupInfo>item"`
	NextToken      string              `xml:"nextToken,omitempty"`
}

func (s *Server) describeSecurityGroups(q query) (any, error) {
	filters, ids, names := filtersOf(q), q.Strings("GroupId"), q.Strings("GroupName")
	var (
		matched []securityGroupItem
		missing string
	)
	s.withState(func(st *state) {
		missing = firstMissing(ids, st.network.securityGroups)
		for _, id := range sortedKeys(st.network.securityGroups) {
			sg := st.network.securityGroups[id]
			if (len(ids) > 0 && !contains(ids, id)) || (len(names) > 0 && !contains(names, sg.Name)) {
				continue
			}
			if !matchFilters(filters, sg.Tags, func(name string) []string {
				switch name {
				case "group-id":
					return []string{sg.ID}
				case "group-name":
					return []string{sg.Name}
				case "vpc-id":
					return []string{sg.VPCID}
				case "description":
					return []string{sg.Description}
				case "owner-id":
					return []string{Account}
				}
				return nil
			}) {
				continue
			}
			matched = append(matched, securityGroupItem{
				OwnerID: Account, GroupID: sg.ID, GroupName: sg.Name, Description: sg.Description, VPCID: sg.VPCID,
				Arn: "arn:aws:ec2:" + s.opts.Region + ":" + Account + ":security-group/" + sg.ID, Tags: ec2Tags(sg.Tags),
			})
		}
	})
	if missing != "" {
		return nil, errorf("InvalidGroup.NotFound", "The security group '%s' does not exist", missing)
	}
	start, end, next, err := page(q, len(matched), 1000)
	if err != nil {
		return nil, err
	}
	return describeSecurityGroupsResponse{SecurityGroups: matched[start:end], NextToken: next}, nil
}

type capacityReservationItem struct {
	ID                    string   `xml:"capacityReservationId"`
	Arn                   string   `xml:"capacityReservationArn"`
	OwnerID               string   `xml:"ownerId"`
	InstanceType          string   `xml:"instanceType"`
	Platform              string   `xml:"instancePlatform"`
	Zone                  string   `xml:"availabilityZone"`
	ZoneID                string   `xml:"availabilityZoneId"`
	Tenancy               string   `xml:"tenancy"`
	Total                 int      `xml:"totalInstanceCount"`
	Available             int      `xml:"availableInstanceCount"`
	State                 string   `xml:"state"`
	StartDate             string   `xml:"startDate,omitempty"`
	EndDate               string   `xml:"endDate,omitempty"`
	EndDateType           string   `xml:"endDateType"`
	InstanceMatchCriteria string   `xml:"instanceMatchCriteria"`
	ReservationType       string   `xml:"reservationType"`
	Interruptible         bool     `xml:"interruptible"`
	Tags                  []ec2Tag `xml:"tagSet>item"`
}

type describeCapacityReservationsResponse struct {
	CapacityReservations []capacityReservationItem `xml:"capacityReservationSet>item"`
	NextToken            string                    `xml:"nextToken,omitempty"`
}

func (s *Server) describeCapacityReservations(q query) (any, error) {
	filters, ids := filtersOf(q), q.Strings("CapacityReservationId")
	var (
		matched []capacityReservationItem
		missing string
	)
	s.withState(func(st *state) {
		missing = firstMissing(ids, st.network.capacityReservations)
		for _, id := range sortedKeys(st.network.capacityReservations) {
			cr := st.network.capacityReservations[id]
			if len(ids) > 0 && !contains(ids, id) {
				continue
			}
			if !matchFilters(filters, cr.Tags, func(name string) []string {
				switch name {
				case "state":
					return []string{cr.State}
				case "owner-id":
					return []string{cr.OwnerID}
				case "instance-type":
					return []string{cr.InstanceType}
				case "availability-zone":
					return []string{cr.Zone}
				case "instance-match-criteria":
					return []string{cr.InstanceMatchCriteria}
				case "instance-platform":
					return []string{cr.Platform}
				case "reservation-type":
					return []string{cr.ReservationType}
				case "capacity-reservation-id":
					return []string{cr.ID}
				}
				return nil
			}) {
				continue
			}
			item := capacityReservationItem{
				ID: cr.ID, Arn: "arn:aws:ec2:" + s.opts.Region + ":" + cr.OwnerID + ":capacity-reservation/" + cr.ID,
				OwnerID: cr.OwnerID, InstanceType: cr.InstanceType, Platform: cr.Platform, Zone: cr.Zone,
				ZoneID: st.zones.ids[cr.Zone], Tenancy: "default", Total: cr.Total, Available: cr.Available, State: cr.State,
				EndDateType: "unlimited", InstanceMatchCriteria: cr.InstanceMatchCriteria, ReservationType: cr.ReservationType,
				Interruptible: cr.Interruptible, Tags: ec2Tags(cr.Tags),
			}
			if !cr.StartDate.IsZero() {
				item.StartDate = cr.StartDate.UTC().Format(time.RFC3339)
			}
			if cr.EndDate != nil {
				item.EndDate, item.EndDateType = cr.EndDate.UTC().Format(time.RFC3339), "limited"
			}
			matched = append(matched, item)
		}
	})
	if missing != "" {
		return nil, errorf("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", missing)
	}
	start, end, next, err := page(q, len(matched), 1000)
	if err != nil {
		return nil, err
	}
	return describeCapacityReservationsResponse{CapacityReservations: matched[start:end], NextToken: next}, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// firstMissing returns the first of ids the map does not hold ("" when it holds them all): EC2 fails a
// Describe call that names an ID it does not know.
func firstMissing[V any](ids []string, m map[string]V) string {
	for _, id := range ids {
		if _, ok := m[id]; !ok {
			return id
		}
	}
	return ""
}
