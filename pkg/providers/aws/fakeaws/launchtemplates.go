package fakeaws

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// launchTemplateState is the launch templates, by ID.
type launchTemplateState struct {
	byID   map[string]*launchTemplate
	lastID uint64
}

// launchTemplate is one stored template (the fake keeps one version per template, as Lathe uses them).
type launchTemplate struct {
	id, name string
	created  time.Time
	tags     map[string]string
	data     LaunchTemplateData
}

// LaunchTemplateData is what a launch template says about the instances launched from it (the parts
// Lathe sets).
type LaunchTemplateData struct {
	ImageID      string
	InstanceType string
	// UserData is base64, as sent.
	UserData         string
	SecurityGroupIDs []string
	// InstanceProfile is the IAM instance profile's name or ARN.
	InstanceProfile string
	// HTTPTokens, HTTPEndpoint, HTTPProtocolIPv6 and HTTPPutResponseHopLimit are the metadata options.
	HTTPTokens, HTTPEndpoint, HTTPProtocolIPv6 string
	HTTPPutResponseHopLimit                    int
	BlockDeviceMappings                        []BlockDeviceMapping
	// AssociatePublicIPAddress is the first network interface's setting ("" when not set).
	AssociatePublicIPAddress string
	Monitoring               bool
	// TagSpecifications are resource type → tags.
	TagSpecifications map[string]map[string]string
	// Reservation is the capacity reservation specification and market type.
	Reservation templateReservation
}

// BlockDeviceMapping is one EBS volume of a launch template.
type BlockDeviceMapping struct {
	DeviceName, VolumeType, KMSKeyID, SnapshotID string
	VolumeSizeGiB, IOPS, Throughput              int
	Encrypted, DeleteOnTermination               string
}

func init() {
	handleEC2("CreateLaunchTemplate", (*Server).createLaunchTemplate)
	handleEC2("DescribeLaunchTemplates", (*Server).describeLaunchTemplates)
	handleEC2("DeleteLaunchTemplate", (*Server).deleteLaunchTemplate)
}

// LaunchTemplate returns the data of the launch template with the name or ID, and whether it exists.
func (s *Server) LaunchTemplate(nameOrID string) (LaunchTemplateData, bool) {
	var (
		out LaunchTemplateData
		ok  bool
	)
	s.withState(func(st *state) {
		if lt := st.launchTemplates.find(nameOrID, nameOrID); lt != nil {
			out, ok = lt.data, true
		}
	})
	return out, ok
}

// LaunchTemplateNames lists the launch templates' names, sorted.
func (s *Server) LaunchTemplateNames() []string {
	var out []string
	s.withState(func(st *state) {
		for _, lt := range st.launchTemplates.byID {
			out = append(out, lt.name)
		}
	})
	slices.Sort(out)
	return out
}

func (ls *launchTemplateState) find(name, id string) *launchTemplate {
	if lt, ok := ls.byID[id]; ok {
		return lt
	}
	for _, lt := range ls.byID {
		if name != "" && lt.name == name {
			return lt
		}
	}
	return nil
}

func parseLaunchTemplateData(q query) (LaunchTemplateData, error) {
	d := LaunchTemplateData{
		ImageID: q["ImageId"], InstanceType: q["InstanceType"], UserData: q["UserData"],
		SecurityGroupIDs: q.Strings("SecurityGroupId"),
		InstanceProfile:  q["IamInstanceProfile.Name"],
		HTTPTokens:       q["MetadataOptions.HttpTokens"], HTTPEndpoint: q["MetadataOptions.HttpEndpoint"],
		HTTPProtocolIPv6:  q["MetadataOptions.HttpProtocolIpv6"],
		Monitoring:        q["Monitoring.Enabled"] == "true",
		TagSpecifications: tagSpecifications(q, "TagSpecification"),
		Reservation:       parseTemplateReservation(q),
	}
	if d.InstanceProfile == "" {
		d.InstanceProfile = q["IamInstanceProfile.Arn"]
	}
	hops, err := q.Int("MetadataOptions.HttpPutResponseHopLimit", 0)
	if err != nil {
		return d, err
	}
	d.HTTPPutResponseHopLimit = hops
	for _, b := range q.List("BlockDeviceMapping") {
		m := BlockDeviceMapping{DeviceName: b["DeviceName"], VolumeType: b["Ebs.VolumeType"], KMSKeyID: b["Ebs.KmsKeyId"],
			SnapshotID: b["Ebs.SnapshotId"], Encrypted: b["Ebs.Encrypted"], DeleteOnTermination: b["Ebs.DeleteOnTermination"]}
		for key, into := range map[string]*int{"Ebs.VolumeSize": &m.VolumeSizeGiB, "Ebs.Iops": &m.IOPS, "Ebs.Throughput": &m.Throughput} {
			if *into, err = b.Int(key, 0); err != nil {
				return d, err
			}
		}
		d.BlockDeviceMappings = append(d.BlockDeviceMappings, m)
	}
	if nics := q.List("NetworkInterface"); len(nics) > 0 {
		d.AssociatePublicIPAddress = nics[0]["AssociatePublicIpAddress"]
		if len(d.SecurityGroupIDs) == 0 {
			d.SecurityGroupIDs = nics[0].Strings("SecurityGroupId")
		}
	}
	return d, nil
}

type launchTemplateResponse struct {
	ID             string   `xml:"launchTemplateId"`
	Name           string   `xml:"launchTemplateName"`
	CreateTime     string   `xml:"createTime"`
	DefaultVersion int      `xml:"defaultVersionNumber"`
	LatestVersion  int      `xml:"latestVersionNumber"`
	Tags           []ec2Tag `xml:"tagSet>item"`
}

func (lt *launchTemplate) response() launchTemplateResponse {
	return launchTemplateResponse{ID: lt.id, Name: lt.name, CreateTime: lt.created.UTC().Format(time.RFC3339),
		DefaultVersion: 1, LatestVersion: 1, Tags: ec2Tags(lt.tags)}
}

type createLaunchTemplateResponse struct {
	LaunchTemplate launchTemplateResponse `xml:"launchTemplate"`
}

func (s *Server) createLaunchTemplate(q query) (any, error) {
	name := q["LaunchTemplateName"]
	if name == "" {
		return nil, errorf("MissingParameter", "The request must contain the parameter LaunchTemplateName")
	}
	data, err := parseLaunchTemplateData(q.Sub("LaunchTemplateData"))
	if err != nil {
		return nil, err
	}
	var out createLaunchTemplateResponse
	s.withState(func(st *state) {
		ls := &st.launchTemplates
		if ls.find(name, "") != nil {
			err = errorf("InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
			return
		}
		if ls.byID == nil {
			ls.byID = map[string]*launchTemplate{}
		}
		ls.lastID++
		lt := &launchTemplate{id: fmt.Sprintf("lt-%017x", ls.lastID), name: name, created: s.opts.Clock.Now(),
			tags: tagSpecifications(q, "TagSpecification")["launch-template"], data: data}
		ls.byID[lt.id] = lt
		out.LaunchTemplate = lt.response()
	})
	return out, err
}

type describeLaunchTemplatesResponse struct {
	LaunchTemplates []launchTemplateResponse `xml:"launchTemplates>item"`
	NextToken       string                   `xml:"nextToken,omitempty"`
}

func (s *Server) describeLaunchTemplates(q query) (any, error) {
	names, ids, filters := q.Strings("LaunchTemplateName"), q.Strings("LaunchTemplateId"), filtersOf(q)
	var (
		all []launchTemplateResponse
		err error
	)
	s.withState(func(st *state) {
		for _, n := range names {
			if st.launchTemplates.find(n, "") == nil {
				err = errorf("InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
				return
			}
		}
		for _, lt := range st.launchTemplates.byID {
			if (len(names) > 0 && !slices.Contains(names, lt.name)) || (len(ids) > 0 && !slices.Contains(ids, lt.id)) {
				continue
			}
			if !matchFilters(filters, lt.tags, func(name string) []string {
				switch name {
				case "launch-template-name":
					return []string{lt.name}
				case "create-time":
					return []string{lt.created.UTC().Format(time.RFC3339)}
				}
				return nil
			}) {
				continue
			}
			all = append(all, lt.response())
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b launchTemplateResponse) int { return cmp.Compare(a.ID, b.ID) })
	start, end, next, err := page(q, len(all), 1000)
	if err != nil {
		return nil, err
	}
	return describeLaunchTemplatesResponse{LaunchTemplates: all[start:end], NextToken: next}, nil
}

func (s *Server) deleteLaunchTemplate(q query) (any, error) {
	name, id := q["LaunchTemplateName"], q["LaunchTemplateId"]
	var (
		out createLaunchTemplateResponse
		err error
	)
	s.withState(func(st *state) {
		lt := st.launchTemplates.find(name, id)
		if lt == nil {
			if id != "" {
				err = errorf("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
			} else {
				err = errorf("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
			}
			return
		}
		delete(st.launchTemplates.byID, lt.id)
		out.LaunchTemplate = lt.response()
	})
	return out, err
}
