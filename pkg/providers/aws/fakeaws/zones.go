package fakeaws

import (
	"fmt"
	"strings"
)

// zoneState is the region's availability zones, with zone IDs as EC2 maps them (use1-az1, ...).
type zoneState struct {
	names []string
	ids   map[string]string
}

func init() {
	seeders = append(seeders, seedZones)
	handleEC2("DescribeAvailabilityZones", (*Server).describeAvailabilityZones)
}

func seedZones(s *Server) {
	s.state.zones = zoneState{ids: map[string]string{}}
	for i, z := range s.opts.Zones {
		s.state.zones.names = append(s.state.zones.names, z)
		s.state.zones.ids[z] = fmt.Sprintf("%s-az%d", regionShortName(s.opts.Region), i+1)
	}
}

// regionShortName abbreviates a region the way zone IDs do: us-east-1 → use1, eu-central-1 → euc1.
func regionShortName(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) < 3 {
		return region
	}
	mid := parts[1]
	abbrev := mid[:1]
	for _, dir := range []string{"north", "south", "east", "west", "central"} {
		if strings.HasPrefix(mid, dir) {
			abbrev = dir[:1]
			if rest := strings.TrimPrefix(mid, dir); rest != "" {
				abbrev += rest[:1]
			}
		}
	}
	return parts[0] + abbrev + parts[2]
}

// ZoneID is the zone ID of a zone of the region ("" for an unknown zone).
func (s *Server) ZoneID(zone string) string {
	var id string
	s.withState(func(st *state) { id = st.zones.ids[zone] })
	return id
}

type availabilityZone struct {
	ZoneName   string `xml:"zoneName"`
	ZoneID     string `xml:"zoneId"`
	ZoneType   string `xml:"zoneType"`
	State      string `xml:"zoneState"`
	RegionName string `xml:"regionName"`
}

type describeAvailabilityZonesResponse struct {
	Zones []availabilityZone `xml:"availabilityZoneInfo>item"`
}

func (s *Server) describeAvailabilityZones(q query) (any, error) {
	filters := filtersOf(q)
	names := q.Strings("ZoneName")
	var out describeAvailabilityZonesResponse
	s.withState(func(st *state) {
		for _, z := range st.zones.names {
			az := availabilityZone{ZoneName: z, ZoneID: st.zones.ids[z], ZoneType: "availability-zone", State: "available", RegionName: s.opts.Region}
			if len(names) > 0 && !anyMatch(names, []string{z}) {
				continue
			}
			if !matchFilters(filters, nil, func(name string) []string {
				switch name {
				case "zone-name":
					return []string{az.ZoneName}
				case "zone-id":
					return []string{az.ZoneID}
				case "zone-type":
					return []string{az.ZoneType}
				case "state":
					return []string{az.State}
				case "region-name":
					return []string{az.RegionName}
				}
				return nil
			}) {
				continue
			}
			out.Zones = append(out.Zones, az)
		}
	})
	return out, nil
}
